#pragma once
// Keras 3's progress output, with the optimizer step (and, when there are any, the steps skipped
// for inf or NaN and the loss scale). At the start, a banner: samples, epochs,
// micro-batch, accumulation and effective batch, optimizer steps, warmup, precision, clipping.
// Then, on a terminal, a live bar per epoch:
//   Epoch 1/20
//   469/938 ━━━━━━━━━━━━━━━━━━━━ 3s 5ms/step - 12034 samples/s - opt_step 117/2345 - accuracy: 0.8123 - loss: 0.5234
// and when output is not a terminal (a log file, CI), one plain line per epoch:
//   Epoch 1/20 - 938/938 - 3s 5ms/step - 12034 samples/s - opt_step 235/4690 - accuracy: 0.8123 - loss: 0.5234 - val_...
// Values print in name order, as Keras 3 prints them.

#include <chrono>
#include <cstdio>
#include <string>

#include "../callbacks.hpp"

namespace accrue::callbacks {

struct ProgressBarOptions {
  enum class Mode { automatic, bar, lines };
  /// automatic: a live bar on a terminal (shows_a_live_bar), a line per epoch otherwise.
  Mode mode = Mode::automatic;
  /// Where to print (stdout by default).
  std::FILE* stream = nullptr;
  /// Print the start-up banner.
  bool banner = true;
};

class ProgressBar final : public Callback {
 public:
  explicit(false) ProgressBar(ProgressBarOptions options = {});
  void on_train_begin(TrainingContext& context) override;
  void on_epoch_begin(int epoch) override;
  void on_micro_batch_end(const StepRecord& record, const Logs& running) override;
  void on_optimizer_step(const StepRecord& record) override;
  void on_epoch_end(int epoch, Logs& logs) override;

 private:
  std::string peak_memory() const;
  using Clock = std::chrono::steady_clock;
  std::string timing(double seconds) const;
  void draw(const Logs& logs, bool final);

  ProgressBarOptions options_;
  std::FILE* out_ = nullptr;
  bool live_ = false;
  const TrainingContext* context_ = nullptr;
  std::int64_t total_steps_ = 0;
  Clock::time_point epoch_start_, last_draw_;
  std::int64_t samples_seen_ = 0;
  std::int64_t batches_seen_ = 0;
  double data_wait_ = 0.0;  // seconds of this epoch  // trained in this epoch by this process
  std::int64_t position_ = 0;      // of the last micro-batch in its epoch, from 1
  std::int64_t skipped_ = 0;  // optimizer steps skipped for inf or NaN
};

/// Whether `out` is a terminal a live bar can redraw on: a terminal that is not TERM=dumb, in a
/// process no launcher started (mpirun, srun and PMI give their processes a pseudo-terminal even
/// when their own output goes to a file).
bool shows_a_live_bar(std::FILE* out);

/// What mixed precision in `compute` does on a CPU without its arithmetic: saves memory, runs slower.
std::string slow_mixed_precision_note(DType compute);

/// The start-up banner ProgressBar prints, for a run about to start.
std::string training_banner(const TrainingContext& context);

}  // namespace accrue::callbacks
