#include "verify_accumulation.hpp"

#include <cmath>
#include <numeric>

#include <fmt/ranges.h>

#include "layers/augmentation.hpp"
#include "layers/dropout.hpp"
#include "../datasets/loader.hpp"
#include "../framework/autograd/autograd.hpp"
#include "../framework/distributed/communicator.hpp"
#include "../framework/ops/ops.hpp"

namespace accrue {

namespace {

// Below this relative difference the two gradients agree to float32 rounding.
constexpr double rounding_only = 1e-4;

std::vector<std::vector<float>> take_gradients(const std::vector<Tensor>& params) {
  std::vector<std::vector<float>> out;
  for (Tensor p : params) {
    const Tensor g = p.grad();
    out.push_back(g.defined() ? g.to_vector<float>() : std::vector<float>(static_cast<std::size_t>(p.numel()), 0.0f));
    p.set_grad(Tensor());
  }
  return out;
}
}  // namespace

std::string AccumulationCheck::str() const {
  std::string s = fmt::format("largest gradient difference {:.3g} ({:.3g} of the largest gradient) in {}", max_abs_difference,
                              max_relative_difference, worst_parameter.empty() ? "-" : worst_parameter);
  if (likely_causes.empty()) return s + ": the accumulated gradient equals the large batch's to float32 rounding";
  s += "; likely causes:";
  for (const auto& c : likely_causes) s += "\n  - " + c;
  return s;
}

namespace {

// The micro-batch sizes of the window the options describe, checked against `data`.
std::vector<std::int64_t> window_sizes(const Dataset& data, const AccumulationCheckOptions& options) {
  std::vector<std::int64_t> sizes = options.sizes;
  if (sizes.empty()) {
    ACCRUE_CHECK(options.micro_batches >= 1 && options.micro_batch >= 1,
                 "verify_accumulation: micro_batches and micro_batch must be at least 1");
    sizes.assign(static_cast<std::size_t>(options.micro_batches), options.micro_batch);
  }
  for (std::int64_t s : sizes) ACCRUE_CHECK(s >= 1, "verify_accumulation: micro-batch sizes must be at least 1");
  const std::int64_t total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  ACCRUE_CHECK(total <= data.size(), "verify_accumulation: the window needs {} samples, '{}' has {}", total, data.name(),
               data.size());
  return sizes;
}

// Backward of the outputs' summed losses for `batch`, samples [first, first + its size) of the
// data, weighted and added as Model::weighted_loss does. The random augmentation layers draw for
// those samples as fit would in epoch 0 of seed 0, which is how data.slice reads them.
void backward_of(Model& model, const Example& batch, std::int64_t first, const std::function<double(std::size_t)>& factor) {
  std::vector<std::int64_t> samples(static_cast<std::size_t>(batch.inputs.at(0).size(0)));
  std::iota(samples.begin(), samples.end(), first);
  const layers::AugmentationKeys keys{0, 0, samples};
  model.weighted_loss(model.loss_sums(model.forward(batch.inputs), batch.targets), factor).backward();
}

// The window accumulated as fit accumulates it: each process's part of each micro-batch forward,
// each output's summed loss weighted by loss_weight against that output's `window_units`, backward
// (the gradients are summed over the processes afterwards). Returns the units of each micro-batch
// (all processes', the first output's).
std::vector<std::int64_t> accumulate_window(Model& model, const Dataset& data, const std::vector<std::int64_t>& sizes,
                                            const std::vector<std::int64_t>& window_units,
                                            const AccumulationCheckOptions& options) {
  distributed::Communicator* processes = options.distributed ? &distributed::world() : nullptr;
  const int n = processes ? processes->size() : 1, rank = processes ? processes->rank() : 0;
  std::vector<std::int64_t> units;
  std::int64_t begin = 0;
  for (std::int64_t size : sizes) {
    units.push_back(model.loss_units(data.slice(begin, begin + size).targets)[0]);
    const auto [first, end] = shard_of_batch(size, rank, n);
    if (first < end) {
      const Example mine = data.slice(begin + first, begin + end);
      const std::vector<std::int64_t> mine_units = model.loss_units(mine.targets);
      backward_of(model, mine, begin + first, [&](std::size_t o) {
        return loss_weight(options.normalization, {.units = mine_units[o],
                                                   .window_units = window_units[o],
                                                   .window_micro_batches = static_cast<int>(sizes.size()),
                                                   .processes = n,
                                                   .summed_loss = model.losses()[o].loss.reduction() == Reduction::sum});
      });
    }
    begin += size;
  }
  return units;
}

// Every process's gradients added up (nothing to add alone).
void sum_over_processes(std::vector<std::vector<float>>& gradients, bool distributed) {
  if (!distributed) return;
  for (std::vector<float>& g : gradients) {
    const Tensor t = Tensor::from(g, Shape{static_cast<std::int64_t>(g.size())});
    distributed::world().allreduce_sum(t);
    g = t.to_vector<float>();
  }
}

// The largest difference between the two gradients, where, and relative to the largest gradient.
void compare(const std::vector<std::pair<std::string, Tensor>>& names, const std::vector<std::vector<float>>& accumulated,
             const std::vector<std::vector<float>>& large, AccumulationCheck& check) {
  double largest = 0.0;
  for (std::size_t i = 0; i < large.size(); ++i) {
    for (std::size_t j = 0; j < large[i].size(); ++j) {
      largest = std::max(largest, static_cast<double>(std::abs(large[i][j])));
      const double d = std::abs(static_cast<double>(accumulated[i][j]) - large[i][j]);
      if (d > check.max_abs_difference) {
        check.max_abs_difference = d;
        check.worst_parameter = names[i].first;
      }
    }
  }
  check.max_relative_difference = largest > 0.0 ? check.max_abs_difference / largest : 0.0;
}

// What makes the accumulated gradient differ from the large batch's beyond rounding.
std::vector<std::string> likely_causes(const Model& model, const Dataset& data, const std::vector<std::int64_t>& sizes,
                                       const std::vector<std::int64_t>& units, const AccumulationCheckOptions& options) {
  std::vector<std::string> causes;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const Layer& l = model.layer(i);
    if (const auto* d = dynamic_cast<const layers::Dropout*>(&l); d != nullptr && options.training && d->rate() > 0.0f)
      causes.push_back(fmt::format("dropout layer '{}' draws a fresh mask for every forward pass, so the two runs drop "
                                   "different units (check in evaluation mode to compare)",
                                   l.name()));
    if (l.uses_batch_statistics())
      causes.push_back(fmt::format("layer '{}' ({}) normalizes with the statistics of each micro-batch, not of the "
                                   "whole window",
                                   l.name(), l.type_name()));
  }
  const bool uneven_units = std::adjacent_find(units.begin(), units.end(), std::not_equal_to<>()) != units.end();
  const bool tokens = data.layout().targets[0].shape.rank() >= 1;  // from the layout (the first output's): no target is read
  const int processes = options.distributed ? distributed::world().size() : 1;
  const bool uneven_parts = std::any_of(sizes.begin(), sizes.end(), [&](std::int64_t s) { return s % processes != 0; });
  if (options.normalization == Normalization::per_micro_batch && uneven_parts)
    causes.push_back("per_micro_batch normalization averages each process's mean loss over the processes, so samples "
                     "of a process with a smaller part of a micro-batch count more");
  if (options.normalization == Normalization::per_micro_batch && uneven_units && !tokens)
    causes.push_back("per_micro_batch normalization (loss / N) gives each micro-batch the same weight whatever its "
                     "size, so samples of smaller micro-batches count more");
  if (options.normalization == Normalization::per_micro_batch && uneven_units && tokens)
    causes.push_back(fmt::format("per-micro-batch averaging (each micro-batch's mean loss per token / N) gives each "
                                 "micro-batch the same weight whatever its number of real tokens ({} here), so tokens "
                                 "of micro-batches with fewer count more; per_window weights by the tokens of the "
                                 "whole window",
                                 fmt::join(units, ", ")));
  if (causes.empty())
    causes.push_back("none of the known causes applies: a layer or loss that couples the samples of a batch (a custom "
                     "one?)");
  return causes;
}

}  // namespace

AccumulationCheck verify_accumulation(Model& model, const Dataset& given, const AccumulationCheckOptions& options) {
  ACCRUE_CHECK(model.compiled(), "verify_accumulation needs a compiled model (for its loss)");
  const Dataset data = model.arrange(given, "verify_accumulation");
  const std::vector<std::int64_t> sizes = window_sizes(data, options);
  if (model.input_count() == 1) model.build(data.sample_shape());  // a model of several inputs is built already
  const TrainingModeGuard mode{model, options.training};
  const std::vector<Tensor> params = model.parameters();
  const std::vector<std::vector<float>> before = take_gradients(params);  // kept aside, restored at the end

  const Example all = data.slice(0, std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}));
  const std::vector<std::int64_t> total_units = model.loss_units(all.targets);
  const std::vector<std::int64_t> units = accumulate_window(model, data, sizes, total_units, options);
  std::vector<std::vector<float>> accumulated = take_gradients(params);
  sum_over_processes(accumulated, options.distributed);
  // One batch of all of them, on every process.
  backward_of(model, all, 0, [&](std::size_t o) {
    const bool mean = model.losses()[o].loss.reduction() == Reduction::mean;
    return mean ? 1.0 / static_cast<double>(total_units[o]) : 1.0;
  });
  const std::vector<std::vector<float>> large = take_gradients(params);

  AccumulationCheck check;
  const auto names = model.named_parameters();
  compare(names, accumulated, large, check);
  if (check.max_relative_difference > rounding_only) check.likely_causes = likely_causes(model, data, sizes, units, options);
  for (std::size_t i = 0; i < params.size(); ++i) check.accumulated.emplace_back(names[i].first, std::move(accumulated[i]));

  // Put the gradients back as they were.
  for (std::size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    if (std::any_of(before[i].begin(), before[i].end(), [](float v) { return v != 0.0f; }))
      p.set_grad(Tensor::from(before[i], p.shape(), {.device = p.device(), .category = MemoryCategory::gradients}));
  }
  return check;
}

}  // namespace accrue
