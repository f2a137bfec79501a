#pragma once
// NanGuard: what to do when a micro-batch's loss is inf or NaN: raise (naming the epoch and
// micro-batch), skip the whole window (no step, gradients zeroed), or warn and go on. It counts
// what it saw. Without a NanGuard, training raises.

#include <cstdint>

#include "../callbacks.hpp"

namespace accrue::callbacks {

struct NanGuardOptions {
  NonFiniteAction action = NonFiniteAction::skip_window;
};

class NanGuard final : public Callback {
 public:
  explicit(false) NanGuard(NanGuardOptions options = {}) : options_(options) {}
  std::optional<NonFiniteAction> on_nonfinite_loss(const StepRecord& record) override;
  void on_train_begin(TrainingContext& context) override;
  std::optional<CallbackState> state() const override;
  void load_state(const CallbackState& state) override;
  /// Micro-batches whose loss was inf or NaN.
  std::int64_t seen() const { return seen_; }

 private:
  NanGuardOptions options_;
  std::int64_t seen_ = 0;
};

}  // namespace accrue::callbacks
