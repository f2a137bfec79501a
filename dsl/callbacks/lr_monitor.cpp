#include "lr_monitor.hpp"

namespace accrue::callbacks {

void LearningRateMonitor::on_train_begin(TrainingContext&) { history_.clear(); }

void LearningRateMonitor::on_optimizer_step(const StepRecord& record) {
  if (record.status == StepRecord::Status::applied) history_.emplace_back(record.optimizer_step, record.lr);
}

void LearningRateMonitor::on_epoch_end(int, Logs& logs) {
  if (!history_.empty()) logs.set("lr", history_.back().second);
}

}  // namespace accrue::callbacks
