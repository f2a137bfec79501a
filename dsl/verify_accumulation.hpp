#pragma once
// Teaching aids for gradient accumulation.
//
// verify_accumulation() computes one window's gradient twice from the same parameters and data:
// as N micro-batches accumulated the way training does (each weighted by the rule fit uses,
// accrue::loss_weight), and as one batch of all their samples. It
// reports the largest difference and what likely causes it: dropout (fresh masks in each run),
// layers that normalize with batch statistics, or the per_micro_batch normalization with uneven
// micro-batches. Without those the two agree to float32 rounding. The model's parameters and
// gradients are left as they were.

#include <string>
#include <vector>

#include "model.hpp"

namespace accrue {

struct AccumulationCheckOptions {
  /// Micro-batches in the window, each of micro_batch samples ...
  int micro_batches = 4;
  std::int64_t micro_batch = 16;
  /// ... or these sizes, when given (uneven micro-batches).
  std::vector<std::int64_t> sizes = {};
  Normalization normalization = Normalization::per_window;
  /// Run in training mode, as fit does (dropout active).
  bool training = true;
  /// Under mpirun: each size is a global micro-batch that the processes of distributed::world()
  /// share as fit shares it (contiguous parts, DataLoader's split), each process weighing its part
  /// as fit does, and the accumulated gradients are summed over the processes. Every process must
  /// call it with the same model, data and options.
  bool distributed = false;
};

struct AccumulationCheck {
  double max_abs_difference = 0.0;
  /// max_abs_difference over the largest gradient magnitude.
  double max_relative_difference = 0.0;
  std::string worst_parameter;
  /// Empty when the difference is float32 rounding.
  std::vector<std::string> likely_causes;
  /// The window's accumulated gradient of each parameter (named as named_parameters()): what fit
  /// hands to the window's close (before clipping and the step).
  std::vector<std::pair<std::string, std::vector<float>>> accumulated;
  /// A paragraph for people: the sizes, the difference and its likely causes.
  std::string str() const;
};

/// Runs the check on the first samples of `data` with `model` (compiled, for its loss).
AccumulationCheck verify_accumulation(Model& model, const Dataset& data, const AccumulationCheckOptions& options = {});

}  // namespace accrue
