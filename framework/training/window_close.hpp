#pragma once
// The close of an accumulation window: the one place where the order of what happens between the
// window's last backward pass and the next window is written (see close_window).

#include <cstdint>
#include <vector>

#include "../distributed/reducer.hpp"
#include "../distributed/sharded_parameters.hpp"
#include "../core/tensor.hpp"
#include "step_record.hpp"

namespace accrue {

class DeferredWeightGradients;
class GradScaler;
class LrSchedule;
namespace optim {
class Optimizer;
class Recipe;
}  // namespace optim

/// What closing a window reads and changes.
struct WindowClose {
  const std::vector<Tensor>& parameters;
  optim::Optimizer& optimizer;
  const optim::Recipe& recipe;
  GradScaler* scaler = nullptr;  // float16 loss scaling, when on
  const LrSchedule& schedule;
  double base_lr = 0.0;          // the optimizer's learning rate before any schedule
  double lr_factor = 1.0;        // a factor on top of the schedule (ReduceLROnPlateau)
  double batch_factor = 1.0;     // the scaling to the window's effective batch (Recipe::reference_batch)
  bool track_norm = false;       // the gradient norm also without clipping by norm
  /// The gradient reduction of a data-parallel run (null: this process alone), and what this
  /// process asks of every process at this close (a stop, a checkpoint).
  distributed::Reducer* reducer = nullptr;
  distributed::Reducer::Requests requests = {};
  /// A sharded run's pieces of the parameters (the reducer reduce-scatters): what is unscaled,
  /// clipped and stepped (`optimizer` is over them), gathered into every rank's parameters after.
  distributed::ShardedParameters* shards = nullptr;
  /// Weight gradients still waiting (WeightGradients::per_window), or null.
  DeferredWeightGradients* deferred = nullptr;
};

/// Closes a window whose gradients are all accumulated in the parameters' .grad(), in this order:
///   0. deferred weight gradients still waiting (a last micro-batch that had no samples on this
///      process, or did not reach a layer) are multiplied in, or dropped with a `poisoned` window;
///   1. a data-parallel run finishes summing the gradients over its processes (buckets started
///      during the last backward pass; every rank then holds the gradient of the whole global
///      window) and agrees on `poisoned` and on the requests in the same reduction: one rank's is
///      every rank's (Reducer::agreed);
///   2. a window `poisoned` by a non-finite loss (NanGuard, or float16 overflowing in the forward
///      pass) is skipped;
///   3. unscale the gradients once (float16 loss scaling); inf or NaN in them skips the step (in
///      a sharded run, found in any rank's part);
///   4. the global L2 norm, when clipping by norm or tracking it (in a data-parallel run added in
///      its shard plan's order, so sharded or not it has the same bits); a non-finite norm skips
///      the step, or throws NonFiniteError under clip(max_norm, {.error_if_nonfinite = true});
///   5. clip by norm, then by value: once, on the whole accumulated and unscaled gradient;
///   6. step the optimizer with the schedule's learning rate at `optimizer_steps` (times
///      lr_factor and batch_factor), and count the step, which moves the schedule on; a sharded
///      run steps its pieces and gathers every rank's into every rank's parameters;
///   7. update the loss scale (it backs off after a skipped step), and zero the gradients.
/// Sets record's status, norms, learning rate and optimizer_step.
void close_window(const WindowClose& w, bool poisoned, std::int64_t& optimizer_steps, StepRecord& record);

}  // namespace accrue
