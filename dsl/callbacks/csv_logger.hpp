#pragma once
// CSVLogger: one row per epoch with every logged value, as Keras's CSVLogger writes it:
//   epoch,accuracy,loss,val_accuracy,val_loss
//   0,0.8123,0.5234,0.8400,0.4400
// In a distributed run rank 0 writes it (every rank's logs are the same).

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../callbacks.hpp"

namespace accrue::callbacks {

struct CSVLoggerOptions {
  char separator = ',';
  /// Add to an existing file instead of replacing it (a resumed run).
  bool append = false;
};

class CSVLogger final : public Callback {
 public:
  explicit CSVLogger(std::string path, CSVLoggerOptions options = {});
  CSVLogger(const CSVLogger& other);
  ~CSVLogger() override;
  void on_train_begin(TrainingContext& context) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  /// The file's length after the last row written: a resumed run cuts the file back to it, so
  /// rows of epochs trained after the checkpoint are not written twice.
  std::optional<CallbackState> state() const override;
  void load_state(const CallbackState& state) override;

 private:
  std::string path_;
  CSVLoggerOptions options_;
  std::FILE* file_ = nullptr;
  std::vector<std::string> columns_;
  std::uint64_t length_ = 0;
  bool writes_ = true;
};

}  // namespace accrue::callbacks
