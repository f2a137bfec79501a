#pragma once
// What the training loop reports of each micro-batch and of the optimizer step that closes its
// window: callbacks receive it (dsl/callbacks.hpp), close_window fills its step (window_close.hpp).

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

namespace accrue {

/// What happened at one micro-batch, and at the optimizer step that closes its window.
struct StepRecord {
  enum class Status {
    /// The window is still open: gradients were added, no step yet.
    accumulating,
    /// The window closed and the optimizer stepped.
    applied,
    /// The window closed without a step: inf or NaN in its loss or gradients.
    skipped,
  };
  Status status = Status::accumulating;
  int epoch = 0;                    // from 0
  std::int64_t micro_batch = 0;     // within the epoch, from 0
  std::int64_t window = 0;          // from 0, over the whole run
  int position = 0;                 // of the micro-batch in its window, from 0
  int window_micro_batches = 1;
  std::int64_t window_samples = 0;
  std::int64_t micro_batch_samples = 0;
  /// Over sequences (a loss per token): the tokens counted in the window on all processes, and in
  /// this micro-batch; 0 otherwise.
  std::int64_t window_tokens = 0;
  std::int64_t micro_batch_tokens = 0;
  /// With sample or class weights (FitOptions::class_weight, Dataset::with_sample_weights): the sum
  /// of this micro-batch's sample weights, by which its samples' losses were multiplied.
  std::optional<double> sample_weight_sum;
  /// The factor the micro-batch's summed loss was multiplied by before backward.
  double loss_weight = 1.0;
  /// Seconds the trainer waited for this micro-batch's data (reading it, or for the background
  /// threads to have it ready).
  double data_wait = 0.0;
  /// Mean loss per sample (per counted token over sequences) of this micro-batch.
  double loss = 0.0;
  /// Optimizer steps applied so far (including this one when applied).
  std::int64_t optimizer_step = 0;
  /// Learning rate of the step (at a window's close).
  double lr = 0.0;
  /// Global L2 norm of the accumulated gradient before and after clipping, when clipping is on or
  /// track_grad_norm asks for it.
  std::optional<double> grad_norm_before, grad_norm_after;
  /// The loss scale of mixed precision, when it is on.
  std::optional<double> loss_scale;
  bool closes_window() const { return position + 1 == window_micro_batches; }
};

/// "accumulating", "applied", "skipped".
std::string_view status_name(StepRecord::Status s);
inline std::ostream& operator<<(std::ostream& os, StepRecord::Status s) { return os << status_name(s); }

}  // namespace accrue
