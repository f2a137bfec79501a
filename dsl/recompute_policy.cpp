// Model::recompute: the segments a RecomputePolicy picks among the graph's nodes. A segment is a
// chain inside the graph (each node reading only the one before it, whose output nothing else
// reads), so that it keeps one input for backward; a Sequential is one chain.

#include <algorithm>
#include <cmath>

#include "model.hpp"

namespace accrue {
namespace {

using Segments = std::vector<std::pair<std::size_t, std::size_t>>;

// Segments of `k` nodes over each chain's nodes (k = 0: the square root of the recomputable
// nodes); an output's node is left out: its output is the loss's input.
Segments every(const std::vector<std::pair<std::size_t, std::size_t>>& chains, std::int64_t k) {
  std::size_t usable = 0;
  for (const auto& [b, e] : chains) usable += e - b;
  const std::size_t size = k > 0 ? static_cast<std::size_t>(k)
                                 : std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(std::sqrt(usable))));
  Segments out;
  for (const auto& [begin, end] : chains)
    for (std::size_t b = begin; b < end; b += size) out.emplace_back(b, std::min(end, b + size));
  return out;
}

}  // namespace

void Model::recompute(const RecomputePolicy& policy) {
  ACCRUE_CHECK(built_, "recompute: model '{}' is not built yet; declare layers::Input or call build(shape) first", name_);
  Segments picked;
  const std::size_t n = nodes_.size();
  // The recomputable nodes (one input, output no model output), as runs where each reads only the
  // one before, whose output nothing else reads.
  std::vector<bool> is_output(inputs_.size() + n, false);
  std::vector<int> reads(inputs_.size() + n, 0);
  for (const std::size_t v : outputs_) is_output[v] = true;
  for (const GraphNode& node : nodes_)
    for (const std::size_t v : node.inputs) ++reads[v];
  // A segment's input has no other reader: where it has, its gradient would gather the segment's
  // part otherwise than without recomputation, and the bits would differ.
  const auto one_input = [&](std::size_t k) {
    return nodes_[k].inputs.size() == 1 && (nodes_[k].inputs[0] < inputs_.size() || reads[nodes_[k].inputs[0]] == 1);
  };
  const auto recomputable = [&](std::size_t k) { return one_input(k) && !is_output[node_value(k)]; };
  std::vector<std::pair<std::size_t, std::size_t>> chains;
  for (std::size_t k = 0; k < n; ++k) {
    if (!recomputable(k)) continue;
    const bool continues = !chains.empty() && chains.back().second == k && nodes_[k].inputs[0] == node_value(k - 1) &&
                           reads[node_value(k - 1)] == 1;
    if (continues) ++chains.back().second;
    else chains.emplace_back(k, k + 1);
  }
  switch (policy.mode) {
    case RecomputePolicy::Mode::none: break;
    case RecomputePolicy::Mode::types:
      for (std::size_t k = 0; k < n; ++k)
        if (one_input(k) && std::find(policy.types.begin(), policy.types.end(), layers_[nodes_[k].layer]->type_name()) !=
                                   policy.types.end())
          picked.emplace_back(k, k + 1);
      break;
    case RecomputePolicy::Mode::every:
      ACCRUE_CHECK(policy.layers >= 0, "recompute: segments of {} layers", policy.layers);
      picked = every(chains, policy.layers);
      break;
    case RecomputePolicy::Mode::larger_than:
      for (std::size_t k = 0; k < n; ++k) {
        if (!recomputable(k)) continue;
        const Layer& l = *layers_[nodes_[k].layer];
        const LayerMemoryUse u = l.memory_use({.input_shape = l.input_shape(), .autocast = std::nullopt, .device = device_});
        const std::size_t kept =
            u.kept_other + (u.keeps_output ? static_cast<std::size_t>(l.output_shape().numel()) * dtype_size(u.output_dtype) : 0);
        if (kept > policy.bytes) picked.emplace_back(k, k + 1);
      }
      break;
  }
  ACCRUE_CHECK(policy.mode == RecomputePolicy::Mode::none || !picked.empty(),
               "recompute: the policy ({}) picks none of model '{}''s {} layers", policy.str(), name_, n);
  recompute_policy_ = policy;
  segments_ = std::move(picked);
}

}  // namespace accrue
