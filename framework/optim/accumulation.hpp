#pragma once
// Gradient accumulation: how many micro-batches make one optimizer step, and what happens to the
// samples of a window.
//
// A window is the run of micro-batches whose gradients are added up before one optimizer step. Its
// loss is weighted by the number of samples in the whole window, so the accumulated gradient is the
// gradient of the mean loss over exactly those samples, whatever the micro-batch sizes. The weight
// is computed in one place, loss_weight below, which fit, verify_accumulation and
// examples/00_manual_loop.cpp call.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace accrue {

/// How many micro-batches each window holds, and how that changes during training.
class AccumulationSchedule {
 public:
  enum class Kind { unset, constant, per_epoch, per_step, effective_batch, callable };

  /// Not set: one micro-batch per window, and free to be set elsewhere (compile or fit) without
  /// a conflict.
  AccumulationSchedule() = default;
  /// N micro-batches per window throughout: `accumulate(4)`.
  AccumulationSchedule(int steps);  // NOLINT: implicit on purpose
  /// PyTorch Lightning's dictionary: `{{0, 8}, {4, 2}}` is 8 from epoch 0 and 2 from epoch 4;
  /// before the first key, 1. Keys count epochs from 0 and must increase.
  AccumulationSchedule(std::initializer_list<std::pair<int, int>> per_epoch);  // NOLINT
  /// A function of the epoch (from 0): `[](int e) { return std::min(16, 1 << (e / 2)); }`.
  template <class F>
    requires std::is_invocable_r_v<int, const F&, int> && (!std::is_convertible_v<F, int>)
  AccumulationSchedule(F f)  // NOLINT: implicit on purpose
      : kind_(Kind::callable), callable_(std::move(f)) {}

  /// A dictionary keyed by optimizer step: the window that starts at applied step s uses the value
  /// of the largest key <= s (1 before the first key).
  static AccumulationSchedule by_step(std::vector<std::pair<std::int64_t, int>> steps);
  /// As many micro-batches as make `samples` per window: effective_batch(256) with micro-batches
  /// of 32 accumulates 8. The micro-batch must divide it (checked when training starts).
  static AccumulationSchedule effective_batch(std::int64_t samples);

  /// A per-epoch dictionary from a list: per_epoch({{0, 8}, {4, 2}}) is {{0, 8}, {4, 2}}.
  static AccumulationSchedule per_epoch(const std::vector<std::pair<std::int64_t, int>>& keys);

  Kind kind() const { return kind_; }
  /// The micro-batches of a constant schedule.
  int constant() const { return constant_; }
  /// The keys of a per-epoch or per-step dictionary, in order.
  const std::vector<std::pair<std::int64_t, int>>& keys() const { return table_; }
  /// The samples per window of effective_batch(samples); 0 for other kinds.
  std::int64_t effective_samples() const { return kind_ == Kind::effective_batch ? samples_ : 0; }
  /// Whether a value was given (a default-constructed schedule is not set).
  bool is_set() const { return kind_ != Kind::unset; }
  /// Micro-batches per window for a window that starts in `epoch` at applied optimizer step
  /// `step`, with micro-batches of `micro_batch` samples.
  int steps_at(int epoch, std::int64_t step, std::int64_t micro_batch) const;
  /// Where the value steps_at(epoch, step, ...) gives stops being sure to hold: windows that start
  /// in an epoch before `epoch_end` after fewer than `step_end` applied steps get it too. A function
  /// of the epoch is called for each following epoch, up to `epoch_limit`, to find where it changes.
  struct Span {
    std::int64_t epoch_end;
    std::int64_t step_end;
    friend bool operator==(const Span&, const Span&) = default;
  };
  Span span_at(int epoch, std::int64_t step, int epoch_limit) const;
  /// Whether the value can change during training.
  bool is_constant() const { return kind_ == Kind::unset || kind_ == Kind::constant || kind_ == Kind::effective_batch; }
  /// Throws ValueError saying what to change: a value below 1, a negative or unordered key.
  void validate() const;
  /// Validation that needs the micro-batch: an effective batch that micro-batches of `micro_batch`
  /// on each of `processes` do not divide (the message lists the micro-batches that would).
  void validate_for(std::int64_t micro_batch, int processes = 1) const;

  /// The same schedule with `factor` times the micro-batches per window (for micro-batches
  /// `factor` times smaller: the windows keep their samples). effective_batch is unchanged.
  AccumulationSchedule scaled(int factor) const;

  /// "4", "{0: 8, 4: 2}", "by step {0: 8, 1000: 4}", "effective batch 256", "callable".
  std::string str() const;
  /// Equal kinds and values; schedules given as functions never compare equal.
  friend bool operator==(const AccumulationSchedule& a, const AccumulationSchedule& b);

 private:
  AccumulationSchedule(Kind kind) : kind_(kind) {}
  Kind kind_ = Kind::unset;
  int constant_ = 1;
  std::vector<std::pair<std::int64_t, int>> table_;  // per_epoch or per_step keys
  std::int64_t samples_ = 0;                         // effective_batch
  std::function<int(int)> callable_;
};

/// What happens to the windows that an epoch's end cuts short.
enum class LastWindow {
  /// Step with the samples there are, the loss weighted by their real number (default).
  normalize,
  /// Leave out the short window's micro-batches (as drop_last does for batches).
  drop,
  /// Keep accumulating into the first window of the next epoch; a window still open when training
  /// ends is applied, normalized by its size.
  carry,
};

/// How each micro-batch's loss is weighted.
enum class Normalization {
  /// By the number of samples in the whole window: the accumulated gradient is that of the mean
  /// loss over the window's samples, exactly (default).
  per_window,
  /// The tutorials' loss / N: each micro-batch's mean loss divided by the window's micro-batch
  /// count. It equals per_window only when every micro-batch has the same size; offered to teach
  /// the difference.
  per_micro_batch,
};

/// When a window's float32 Dense weight gradients (dW = dy^T x) are multiplied.
enum class WeightGradients {
  /// Each micro-batch's backward adds its own into .grad(): accumulation at its least memory
  /// (default).
  per_micro_batch,
  /// Rows of x and dy wait and the window's last backward multiplies them at once
  /// (DeferredWeightGradients): the same bits; the tutorial MLP's epoch 1.03x to 1.09x faster at
  /// 16 x 4 and 1.17x to 1.26x at 8 x 8 (bench/mlp_epoch's "pw" configurations), for up to half of
  /// each such weight's gradient more memory (in the plan's gradients). Not under a memory limit or
  /// memory_budget.
  per_window,
};

struct AccumulateOptions {
  LastWindow last_window = LastWindow::normalize;
  Normalization normalization = Normalization::per_window;
  WeightGradients weight_gradients = WeightGradients::per_micro_batch;
  friend bool operator==(const AccumulateOptions&, const AccumulateOptions&) = default;
};

/// One micro-batch's share of its window, as the loss weight counts it. Units are what the loss's
/// mean divides by: samples, or for sequences the tokens it counts (ignore_index left out).
struct MicroBatchShare {
  std::int64_t units = 0;         // this process's part of the micro-batch
  std::int64_t window_units = 0;  // the whole window's, on every process
  int window_micro_batches = 1;
  int processes = 1;              // whose gradients are summed at the window's close
  /// The loss sums its samples' losses (Reduction::sum) instead of averaging them.
  bool summed_loss = false;
};

/// The rule of accumulation: the factor on a micro-batch's summed loss, so that the gradients
/// summed over the window (and over the processes) are
///   - per_window: the gradient of the mean loss over the window's units, 1 / window_units;
///   - per_micro_batch: the tutorials' mean / N, 1 / units / window_micro_batches, averaged over the
///     processes as PyTorch's DDP averages (/ processes);
/// 1 for a summed loss under per_window (and 1 / N / processes under per_micro_batch), and 0 for a
/// share without units. fit and verify_accumulation weigh every micro-batch with it.
double loss_weight(Normalization normalization, const MicroBatchShare& share);

/// The units of a window of `micro_batches` micro-batches that starts at micro-batch `start` of
/// an epoch of `per_epoch` micro-batches, on all processes: units_of(epochs_away, index) counts
/// micro-batch `index` of the epoch `epochs_away` from this one. A window carried over an epoch's
/// end (LastWindow::carry) starts before 0 or runs past the epoch: those parts count in the
/// neighbouring epoch's order.
std::int64_t window_units(std::int64_t start, int micro_batches, std::int64_t per_epoch,
                          const std::function<std::int64_t(std::int64_t epochs_away, std::int64_t index)>& units_of);

std::string_view last_window_name(LastWindow w);
std::string_view normalization_name(Normalization n);

}  // namespace accrue
