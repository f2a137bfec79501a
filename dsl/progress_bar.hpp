#pragma once
// Keras-style progress output. On a terminal, a live bar per epoch:
//   Epoch 1/20
//   469/938 ━━━━━━━━━━━━━━━━━━━━ 3s 5ms/step - 12034 samples/s - accuracy: 0.8123 - loss: 0.5234
// When output is not a terminal (a log file, CI), one plain line per epoch:
//   Epoch 1/20 - 938/938 - 3s 5ms/step - 12034 samples/s - accuracy: 0.8123 - loss: 0.5234 - val_...

#include <chrono>
#include <cstdio>
#include <string>

#include "accrue/dsl/callbacks.hpp"

namespace accrue::callbacks {

struct ProgressBarOptions {
  enum class Mode { automatic, bar, lines };
  /// automatic: a live bar on a terminal, lines otherwise.
  Mode mode = Mode::automatic;
  /// Where to print (stdout by default).
  std::FILE* stream = nullptr;
};

class ProgressBar final : public Callback {
 public:
  explicit(false) ProgressBar(ProgressBarOptions options = {});
  void on_train_begin(const TrainInfo& info) override;
  void on_epoch_begin(int epoch) override;
  void on_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;

 private:
  using Clock = std::chrono::steady_clock;
  std::string timing(std::int64_t batches, double seconds) const;
  void draw(std::int64_t batches, const Logs& logs, bool final);

  ProgressBarOptions options_;
  std::FILE* out_ = nullptr;
  bool live_ = false;
  TrainInfo info_;
  int epoch_ = 0;
  Clock::time_point epoch_start_, last_draw_;
  std::int64_t samples_seen_ = 0;
  std::int64_t batches_seen_ = 0;
};

}  // namespace accrue::callbacks
