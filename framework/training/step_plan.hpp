#pragma once
// The plan of a training run: which micro-batches form each optimizer step, computed from the
// dataset size, the micro-batch, the accumulation schedule and the end-of-epoch policy before
// training starts. total_optimizer_steps() is exact, and learning-rate schedules read their
// lengths from it.
//
// The plan does not list every window of the run: epochs that start alike (the same window carried
// into them, the same accumulation) are alike, so it keeps the start of each epoch it worked out
// and, where epochs repeat in a cycle, the cycle once with what one turn adds. Its size and the time
// to make it do not grow with the number of epochs (a schedule given as a function of the epoch is
// still called once per epoch), and any epoch's windows are worked out again when asked for.

#include <cstdint>
#include <string>
#include <vector>

#include "../optim/accumulation.hpp"

namespace accrue {

/// One window: consecutive micro-batches whose gradients make one optimizer step. A carried
/// window spans epochs, from micro-batch `first` of `first_epoch` to its end in `last_epoch`.
struct Window {
  /// Its place among the run's windows (dropped ones count): the optimizer step it makes, from 0,
  /// when no window before it was dropped.
  std::int64_t index = 0;
  int first_epoch = 0;
  std::int64_t first = 0;
  int last_epoch = 0;
  /// Micro-batches the window was planned with (its accumulation value); more than it holds when short.
  int planned = 1;
  int micro_batches = 0;
  std::int64_t samples = 0;
  /// false for a short window left out by LastWindow::drop: its micro-batches do not run.
  bool applied = true;
};

/// Where one micro-batch stands in its window.
struct MicroBatchSlot {
  std::int64_t index;         // micro-batch within the epoch
  std::int64_t window;        // the window's Window::index
  int position;               // 0-based place in the window
  int window_micro_batches;   // micro-batches the window holds
  std::int64_t window_samples;
  bool closes_window;         // the optimizer steps after this micro-batch
  int window_planned = 1;     // micro-batches the window was planned with (more than it holds when short)
};

/// A window as one epoch runs it: its micro-batches there, in order (all of them, or the part of a
/// window carried over an epoch's end).
struct EpochWindow {
  std::vector<MicroBatchSlot> micro_batches;
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

  /// Throws ValueError for sizes that make no batch, an invalid schedule, or counts beyond 64 bits.
  explicit StepPlan(const Spec& spec);

  const Spec& spec() const { return spec_; }
  /// Optimizer steps the run will apply (dropped windows do not count).
  std::int64_t total_optimizer_steps() const { return end_.steps; }
  std::int64_t micro_batches_per_epoch() const { return per_epoch_; }
  /// Samples each epoch trains: all of them, or those of the whole micro-batches with drop_last.
  std::int64_t samples_per_epoch() const { return samples_per_epoch_; }
  /// Samples in micro-batch `index` of an epoch (the last may be short).
  std::int64_t micro_batch_samples(std::int64_t index) const;
  /// The windows that close in `epoch`, in order, dropped ones included; for the last epoch also a
  /// window still open when training ends (carry), which is applied then.
  std::vector<Window> epoch_windows(int epoch) const;
  /// The micro-batches that run in `epoch`, in order, with their windows. A micro-batch's index is
  /// also its place in this list: the only window that does not run (LastWindow::drop) is an
  /// epoch's last.
  std::vector<MicroBatchSlot> epoch_slots(int epoch) const;
  /// The same micro-batches window by window: the windows that run in `epoch`, from micro-batch
  /// `from` on (where a resumed run continues: its window is listed from there).
  std::vector<EpochWindow> epoch_run(int epoch, std::int64_t from = 0) const;

  /// Optimizer steps applied by the end of `epochs` epochs (fractions count the steps of that part
  /// of the next epoch, rounded to the nearest; past the end, at the last epoch's rate).
  std::int64_t steps_after_epochs(double epochs) const;
  /// Optimizer steps applied once `samples` samples have gone into applied windows (the first
  /// step that reaches the count; past the end, in windows the size of the last).
  std::int64_t steps_after_samples(std::int64_t samples) const;
  /// The largest planned effective batch (micro-batch x accumulation) of the run.
  std::int64_t max_effective_batch() const { return max_effective_batch_; }
  /// Epoch starts the plan keeps (for tests of its size).
  std::size_t stored_epochs() const { return starts_.size(); }

 private:
  // Where the run stands when an epoch starts.
  struct EpochStart {
    std::int64_t epoch = 0;
    std::int64_t steps = 0;    // applied optimizer steps before it
    std::int64_t windows = 0;  // windows closed before it, dropped ones included
    std::int64_t samples = 0;  // samples in the applied windows closed before it
    bool carrying = false;     // a window carried into it (LastWindow::carry)
    Window open;
  };
  // Epochs [first_epoch, end_epoch) repeat the `period` epoch starts from starts_[source] on, each
  // turn adding `turn` (its epoch, steps, windows and samples) to them.
  struct Cycle {
    std::int64_t first_epoch, end_epoch;
    std::size_t source;
    std::int64_t period;
    EpochStart turn;
  };

  // Works out the epoch starts and cycles; returns the largest planned accumulation.
  int walk_epochs();
  // Runs epoch s.epoch: calls closed(window, first, count) for each window that closes in it
  // (count of its micro-batches from `first` lie in this epoch) and returns the next epoch's start.
  template <class F>
  EpochStart run_epoch(const EpochStart& s, F&& closed) const;
  // The window carried out of an epoch, completed: its size once it closes later or training ends.
  Window completed(const EpochStart& next) const;
  // The start of `epoch`, 0 <= epoch <= epochs (the run's end, before a still open window is applied).
  EpochStart start_of(std::int64_t epoch) const;
  // `s` moved on by `turns` turns of a cycle.
  static EpochStart shifted(EpochStart s, const EpochStart& turn, std::int64_t turns);
  std::int64_t steps_by_end_of(std::int64_t epoch) const;
  std::int64_t samples_in(std::int64_t first, std::int64_t count) const;

  Spec spec_;
  std::int64_t per_epoch_ = 0;
  std::int64_t samples_per_epoch_ = 0;
  std::vector<EpochStart> starts_;  // the epoch starts worked out, in epoch order
  std::vector<Cycle> cycles_;
  EpochStart after_;  // after the last epoch
  EpochStart end_;    // the same, with a still open window applied
  std::int64_t last_window_samples_ = 1;
  std::int64_t max_effective_batch_ = 0;
};

}  // namespace accrue
