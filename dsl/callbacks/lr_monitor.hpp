#pragma once
// LearningRateMonitor: records the learning rate of every applied optimizer step and adds the
// last one to each epoch's logs as "lr" (so CSVLogger and the progress output show it).

#include <cstdint>
#include <utility>
#include <vector>

#include "../callbacks.hpp"

namespace accrue::callbacks {

class LearningRateMonitor final : public Callback {
 public:
  void on_train_begin(TrainingContext& context) override;
  void on_optimizer_step(const StepRecord& record) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  /// (optimizer step, learning rate) of every applied step, in order.
  const std::vector<std::pair<std::int64_t, double>>& history() const { return history_; }

 private:
  std::vector<std::pair<std::int64_t, double>> history_;
};

}  // namespace accrue::callbacks
