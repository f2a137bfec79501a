#pragma once
// ModelCheckpoint: saves the model's weights (safetensors) into a folder after each epoch, as
// last.safetensors, and, with keep_best, best.safetensors whenever `monitor` improves; with a
// weight average, the average (options.averaged). In a distributed run rank 0 writes them.

#include <optional>
#include <string>

#include "../callbacks.hpp"

namespace accrue::callbacks {

struct ModelCheckpointOptions {
  /// Also keep the best epoch's weights as best.safetensors.
  bool keep_best = false;
  std::string monitor = "val_loss";
  /// "min", "max", or "auto": the direction the monitored metric declares (lower for the loss).
  std::string mode = "auto";
  /// Save last.safetensors every `every` epochs.
  int every = 1;
  /// Save the recipe's weight average (.ema(), .swa()) instead of the training weights; by default
  /// whenever validation runs on the average, so that best.safetensors holds the weights whose
  /// val_loss was the best. true without an average is ValueError when training begins. Before
  /// the average starts (an SWA's first step), the training weights are saved.
  std::optional<bool> averaged = {};
};

class ModelCheckpoint final : public Callback {
 public:
  explicit ModelCheckpoint(std::string folder, ModelCheckpointOptions options = {});
  void on_train_begin(TrainingContext& context) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  std::optional<CallbackState> state() const override;
  void load_state(const CallbackState& state) override;
  std::string last_path() const;
  std::string best_path() const;
  std::optional<int> best_epoch() const { return best_epoch_; }

 private:
  void save(const std::string& path) const;
  std::string folder_;
  ModelCheckpointOptions options_;
  TrainingContext* context_ = nullptr;
  BestValue best_;
  std::optional<int> best_epoch_;
  bool saves_average_ = false;
};

}  // namespace accrue::callbacks
