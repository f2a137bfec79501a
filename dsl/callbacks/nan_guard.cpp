#include "accrue/dsl/callbacks/nan_guard.hpp"

#include "accrue/framework/log.hpp"

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

}  // namespace accrue::callbacks
