#pragma once
// The plan of a training run: which micro-batches form each optimizer step, computed from the
// dataset size, the micro-batch, the accumulation schedule and the end-of-epoch policy before
// training starts. total_optimizer_steps() is exact, and learning-rate schedules read their
// lengths from it.

#include <cstdint>
#include <string>
#include <vector>

#include "accrue/framework/training/accumulation.hpp"

namespace accrue {

/// One window: consecutive micro-batches whose gradients make one optimizer step. A carried
/// window spans two epochs.
struct Window {
  struct Segment {
    int epoch;
    std::int64_t first;  // first micro-batch of the segment, within its epoch
    int count;
  };
  std::vector<Segment> segments;
  /// Micro-batches the window was planned with (its accumulation value); more than it holds when short.
  int planned = 1;
  std::int64_t samples = 0;
  /// false for a short window left out by LastWindow::drop: its micro-batches do not run.
  bool applied = true;
  int micro_batches() const;
};

/// Where one micro-batch stands in its window.
struct MicroBatchSlot {
  std::int64_t index;         // micro-batch within the epoch
  std::int64_t window;        // index into StepPlan::windows()
  int position;               // 0-based place in the window
  int window_micro_batches;   // micro-batches the window holds
  std::int64_t window_samples;
  bool closes_window;         // the optimizer steps after this micro-batch
};

class StepPlan {
 public:
  struct Spec {
    std::int64_t dataset_size = 0;
    std::int64_t micro_batch = 1;
    bool drop_last = false;
    int epochs = 1;
    AccumulationSchedule schedule = {};
    LastWindow last_window = LastWindow::normalize;
  };

  /// Throws ValueError for sizes that make no batch or an invalid schedule.
  explicit StepPlan(const Spec& spec);

  const Spec& spec() const { return spec_; }
  /// Optimizer steps the run will apply (dropped windows do not count).
  std::int64_t total_optimizer_steps() const { return total_steps_; }
  std::int64_t micro_batches_per_epoch() const { return per_epoch_; }
  /// Samples in micro-batch `index` of an epoch (the last may be short).
  std::int64_t micro_batch_samples(std::int64_t index) const;
  const std::vector<Window>& windows() const { return windows_; }
  /// The micro-batches that run in `epoch`, in order, with their windows.
  std::vector<MicroBatchSlot> epoch_slots(int epoch) const;

  /// Optimizer steps applied by the end of `epochs` epochs (fractions count the steps of that part
  /// of the next epoch, rounded to the nearest; past the end, at the last epoch's rate).
  std::int64_t steps_after_epochs(double epochs) const;
  /// Optimizer steps applied once `samples` samples have gone into applied windows (the first
  /// step that reaches the count; past the end, in windows the size of the last).
  std::int64_t steps_after_samples(std::int64_t samples) const;
  /// The largest planned effective batch (micro-batch x accumulation) of the run.
  std::int64_t max_effective_batch() const;

 private:
  Spec spec_;
  std::int64_t per_epoch_ = 0;
  std::int64_t total_steps_ = 0;
  std::vector<Window> windows_;
  std::vector<std::int64_t> steps_by_epoch_end_;  // applied steps when epoch e ends
};

}  // namespace accrue
