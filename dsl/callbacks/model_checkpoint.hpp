#pragma once
// ModelCheckpoint: saves the model's weights (safetensors) into a folder after each epoch, as
// last.safetensors, and, with keep_best, best.safetensors whenever `monitor` improves. In a
// distributed run rank 0 writes them.

#include <optional>
#include <string>

#include "accrue/dsl/callbacks.hpp"

namespace accrue::callbacks {

struct ModelCheckpointOptions {
  /// Also keep the best epoch's weights as best.safetensors.
  bool keep_best = false;
  std::string monitor = "val_loss";
  std::string mode = "auto";
  /// Save last.safetensors every `every` epochs.
  int every = 1;
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
  std::string folder_;
  ModelCheckpointOptions options_;
  TrainingContext* context_ = nullptr;
  BestValue best_;
  std::optional<int> best_epoch_;
};

}  // namespace accrue::callbacks
