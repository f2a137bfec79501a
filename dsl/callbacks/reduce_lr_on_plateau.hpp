#pragma once
// ReduceLROnPlateau with Keras's options: multiply the learning rate by `factor` when `monitor`
// has not improved for `patience` epochs. It scales whatever the schedule gives, from the next
// optimizer step on.

#include "../callbacks.hpp"
#include "../../framework/training/lr_schedule.hpp"

namespace accrue::callbacks {

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  /// "min", "max", or "auto": the direction the monitored metric declares (lower for the loss).
  std::string mode = "auto";
  double min_delta = 1e-4;
  int cooldown = 0;
  /// Lower bound on the learning rate.
  double min_lr = 0.0;
};

class ReduceLROnPlateau final : public Callback {
 public:
  explicit(false) ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  void on_train_begin(TrainingContext& context) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  std::optional<CallbackState> state() const override;
  void load_state(const CallbackState& state) override;

 private:
  ReduceLROnPlateauOptions options_;
  std::optional<PlateauTracker> tracker_;
  TrainingContext* context_ = nullptr;
};

}  // namespace accrue::callbacks
