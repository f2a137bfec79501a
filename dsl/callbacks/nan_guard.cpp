#include "nan_guard.hpp"

#include <cstdlib>

#include "../../framework/core/log.hpp"

namespace accrue::callbacks {

void NanGuard::on_train_begin(TrainingContext&) { seen_ = 0; }

std::optional<NonFiniteAction> NanGuard::on_nonfinite_loss(const StepRecord& r) {
  ++seen_;
  if (options_.action == NonFiniteAction::skip_window)
    log::warning("epoch {}, micro-batch {} (micro-batch {}/{} of optimizer step {}): the loss is not finite; skipping "
                 "the window",
                 r.epoch + 1, r.micro_batch + 1, r.position + 1, r.window_micro_batches, r.window + 1);
  return options_.action;
}

std::optional<CallbackState> NanGuard::state() const { return CallbackState{std::to_string(seen_), {}}; }

void NanGuard::load_state(const CallbackState& state) {
  char* end = nullptr;
  const long long seen = std::strtoll(state.text.c_str(), &end, 10);
  ACCRUE_CHECK(!state.text.empty() && *end == '\0' && seen >= 0, "NanGuard: saved state '{}' is not a count", state.text);
  seen_ = seen;
}

}  // namespace accrue::callbacks
