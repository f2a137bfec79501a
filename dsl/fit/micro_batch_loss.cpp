// What a micro-batch's loss counts and feeds: the units (samples or tokens) of the micro-batch and
// of its window, its samples' weights, an inf or NaN loss, and the epoch's running loss and metrics.

#include <cmath>

#include "accrue/dsl/fit/training_run.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/log.hpp"

namespace accrue::detail {

std::int64_t TrainingRun::units_of(const std::vector<std::int64_t>& samples) const {
  std::int64_t n = 0;
  for (const std::int64_t i : samples) n += sample_units_[static_cast<std::size_t>(i)];
  return n;
}

std::int64_t TrainingRun::micro_batch_units(const Batch& batch) const {
  return units_per_sample_ ? batch.size() * *units_per_sample_ : units_of(batch.samples);
}

std::int64_t TrainingRun::window_units(const MicroBatchSlot& slot) const {
  if (units_per_sample_) return slot.window_samples * *units_per_sample_;
  std::optional<DataLoader> other;  // a neighbouring epoch's order, for a carried window
  return accrue::window_units(slot.index - slot.position, slot.window_micro_batches, loader_->size(),
                              [&](std::int64_t epochs_away, std::int64_t index) {
                                if (epochs_away == 0) return units_of(loader_->sample_indices(index, true));
                                if (!other || other->epoch() != loader_->epoch() + epochs_away) {
                                  other.emplace(*loader_);
                                  other->set_epoch(loader_->epoch() + epochs_away);
                                }
                                return units_of(other->sample_indices(index, true));
                              });
}

Tensor TrainingRun::micro_batch_loss(const Batch& batch, const Tensor& prediction, StepRecord& record) const {
  if (sample_weights_.empty()) return model_.loss().batch_sum(prediction, batch.targets);
  std::vector<float> w(batch.samples.size());
  double sum = 0.0;
  for (std::size_t b = 0; b < batch.samples.size(); ++b)
    sum += w[b] = sample_weights_[static_cast<std::size_t>(batch.samples[b])];
  record.sample_weight_sum = sum;
  return model_.loss().weighted_sum(prediction, batch.targets, w);
}

// An inf or NaN loss: with float16 loss scaling the scaler's business (the window is dropped, as
// for an overflow in backward); otherwise the first callback that answers decides.
void TrainingRun::handle_nonfinite_loss(double loss, const StepRecord& record) {
  if (scaler_) {
    state_.window_poisoned = true;
    return;
  }
  std::optional<NonFiniteAction> action;
  for (Callback* c : callbacks_)
    if ((action = c->on_nonfinite_loss(record))) break;
  switch (action.value_or(NonFiniteAction::raise)) {
    case NonFiniteAction::raise:
      throw NonFiniteError(fmt::format("the loss is {}; lower the learning rate, check the inputs for inf and NaN, or "
                                       "add callbacks::NanGuard to skip such windows",
                                       loss));
    case NonFiniteAction::skip_window: state_.window_poisoned = true; break;
    case NonFiniteAction::warn:
      log::warning("epoch {}, micro-batch {}: the loss is {}; going on", record.epoch + 1, record.micro_batch + 1, loss);
      break;
  }
}

// The epoch's running loss and metrics, when the micro-batch trained and its loss is finite. With
// back-off, a window's updates wait for its end, so that a redone window counts once.
void TrainingRun::update_metrics(const MicroBatchLoss& loss, const Batch& batch) {
  if (!std::isfinite(loss.value) || state_.window_poisoned || batch.size() == 0) return;
  if (options_.backoff_on_oom) {
    state_.pending.push_back({loss.prediction.detach(), batch.targets, loss.value, loss.units});
    return;
  }
  const NoGradGuard no_grad;
  state_.epoch_loss.add(loss.value, loss.units);
  for (Metric& m : model_.metrics_) m.update(loss.prediction, batch.targets, loss.value);
}

void TrainingRun::apply_held_back_updates() {
  if (state_.pending.empty()) return;
  const NoGradGuard no_grad;
  for (const PendingUpdate& u : state_.pending) {
    state_.epoch_loss.add(u.loss, u.units);
    for (Metric& m : model_.metrics_) m.update(u.prediction, u.targets, u.loss);
  }
  state_.pending.clear();
}

}  // namespace accrue::detail
