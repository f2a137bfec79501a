#pragma once
// EarlyStopping with Keras's options: stop when `monitor` has not improved by min_delta for
// `patience` epochs; optionally put back the weights of the best epoch.

#include <optional>
#include <string>
#include <vector>

#include "../callbacks.hpp"
#include "../../framework/core/tensor.hpp"

namespace accrue::callbacks {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;
  int patience = 0;
  /// "min", "max", or "auto": the direction the monitored metric declares (lower for the loss), as
  /// Keras 3; a name whose direction is unknown is a ValueError when training begins.
  std::string mode = "auto";
  /// Stop only if the value has not reached this by the end of patience.
  std::optional<double> baseline = {};
  bool restore_best_weights = false;
  /// Epochs to wait before watching (warmup).
  int start_from_epoch = 0;
};

class EarlyStopping final : public Callback {
 public:
  explicit(false) EarlyStopping(EarlyStoppingOptions options = {});
  void on_train_begin(TrainingContext& context) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  std::optional<CallbackState> state() const override;
  void load_state(const CallbackState& state) override;
  /// The epoch training stopped after (from 0), when it stopped early.
  std::optional<int> stopped_epoch() const { return stopped_epoch_; }
  std::optional<int> best_epoch() const { return best_epoch_; }

 private:
  EarlyStoppingOptions options_;
  TrainingContext* context_ = nullptr;
  BestValue best_;
  std::optional<int> best_epoch_, stopped_epoch_;
  int wait_ = 0;
  std::vector<Tensor> best_weights_;
};

}  // namespace accrue::callbacks
