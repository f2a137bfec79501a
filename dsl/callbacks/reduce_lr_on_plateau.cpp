#include "reduce_lr_on_plateau.hpp"

#include "../../framework/core/error.hpp"
#include "../../framework/core/log.hpp"

namespace accrue::callbacks {

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options) : options_(std::move(options)) {
  ACCRUE_CHECK(options_.min_lr >= 0.0, "ReduceLROnPlateau: min_lr must be >= 0, got {}", options_.min_lr);
  tracker_.emplace(schedules::PlateauOptions{.monitor = options_.monitor, .mode = options_.mode,
                                             .factor = options_.factor, .patience = options_.patience,
                                             .min_delta = options_.min_delta, .cooldown = options_.cooldown});
}

void ReduceLROnPlateau::on_train_begin(TrainingContext& context) {
  context_ = &context;
  tracker_.emplace(tracker_->options());
  tracker_->resolve(context.log_directions);
}

void ReduceLROnPlateau::on_epoch_end(int epoch, Logs& logs) {
  const auto value = logs.get(options_.monitor);
  ACCRUE_CHECK(value.has_value(), "ReduceLROnPlateau monitors '{}', which the epoch's logs do not have ({}); pass "
                                  "validation data or monitor \"loss\"",
               options_.monitor, logs.str());
  if (!tracker_->update(*value)) return;
  const double floor = context_->base_lr > 0.0 ? options_.min_lr / context_->base_lr : 0.0;
  const double before = context_->lr_factor;
  context_->lr_factor = std::max(floor, before * options_.factor);
  if (context_->lr_factor < before)
    log::info("ReduceLROnPlateau: epoch {}: {} has not improved for {} epochs; learning rate factor {:g} -> {:g}",
              epoch + 1, options_.monitor, options_.patience + 1, before, context_->lr_factor);
}

std::optional<CallbackState> ReduceLROnPlateau::state() const { return CallbackState{tracker_->state_text(), {}}; }

void ReduceLROnPlateau::load_state(const CallbackState& state) { tracker_->load_state_text(state.text); }

}  // namespace accrue::callbacks
