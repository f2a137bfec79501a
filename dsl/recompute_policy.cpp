// Sequential::recompute: the segments a RecomputePolicy picks among the model's layers.

#include <algorithm>
#include <cmath>

#include "sequential.hpp"

namespace accrue {
namespace {

using Segments = std::vector<std::pair<std::size_t, std::size_t>>;

// Segments of `k` layers over layers [0, n - 1): the last layer's output is the loss's input.
Segments every(std::size_t n, std::int64_t k) {
  const std::size_t usable = n > 1 ? n - 1 : 0;
  const std::size_t size = k > 0 ? static_cast<std::size_t>(k)
                                 : std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(std::sqrt(usable))));
  Segments out;
  for (std::size_t b = 0; b < usable; b += size) out.emplace_back(b, std::min(usable, b + size));
  return out;
}

}  // namespace

void Sequential::recompute(const RecomputePolicy& policy) {
  ACCRUE_CHECK(built_, "recompute: model '{}' is not built yet; declare layers::Input or call build(shape) first", name_);
  Segments picked;
  const std::size_t n = layers_.size();
  switch (policy.mode) {
    case RecomputePolicy::Mode::none: break;
    case RecomputePolicy::Mode::types:
      for (std::size_t i = 0; i < n; ++i)
        if (std::find(policy.types.begin(), policy.types.end(), layers_[i]->type_name()) != policy.types.end())
          picked.emplace_back(i, i + 1);
      break;
    case RecomputePolicy::Mode::every:
      ACCRUE_CHECK(policy.layers >= 0, "recompute: segments of {} layers", policy.layers);
      picked = every(n, policy.layers);
      break;
    case RecomputePolicy::Mode::larger_than:
      for (std::size_t i = 0; i + 1 < n; ++i) {
        const LayerMemoryUse u = layers_[i]->memory_use(
            {.input_shape = layers_[i]->input_shape(), .autocast = std::nullopt, .device = device_});
        const std::size_t kept = u.kept_other + (u.keeps_output ? static_cast<std::size_t>(layers_[i]->output_shape().numel()) *
                                                                      dtype_size(u.output_dtype)
                                                                : 0);
        if (kept > policy.bytes) picked.emplace_back(i, i + 1);
      }
      break;
  }
  ACCRUE_CHECK(policy.mode == RecomputePolicy::Mode::none || !picked.empty(),
               "recompute: the policy ({}) picks none of model '{}''s {} layers", policy.str(), name_, n);
  recompute_policy_ = policy;
  segments_ = std::move(picked);
}

}  // namespace accrue
