// What a micro-batch's loss feeds: its samples' weights, an inf or NaN loss, and the epoch's running
// loss and metrics. What it counts (samples or tokens) is LossUnits (loss_units.hpp).

#include <cmath>
#include <numeric>

#include "training_run.hpp"
#include "../../framework/autograd/autograd.hpp"
#include "../../framework/core/log.hpp"

namespace accrue::detail {

std::vector<Tensor> TrainingRun::micro_batch_losses(const Batch& batch, const std::vector<Tensor>& predictions,
                                                    StepRecord& record) const {
  // Every output's units weigh the samples alike (class_weight is for models of one output).
  const std::vector<float> weights = units_[0].weights_of(batch);
  if (!weights.empty()) record.sample_weight_sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  return model_.loss_sums(predictions, batch.targets, weights);
}

// An inf or NaN loss: with float16 loss scaling the scaler's business (the window is dropped, as
// for an overflow in backward); otherwise the first callback that answers decides.
void TrainingRun::handle_nonfinite_loss(double loss, const StepRecord& record) {
  if (model_.scaler()) {
    state_.window_poisoned = true;
    return;
  }
  std::optional<NonFiniteAction> action;
  for (Callback* c : *callbacks_)
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
  PendingUpdate update{{}, batch.targets, loss.values, loss.units, batch.size()};
  for (const Tensor& p : loss.predictions) update.predictions.push_back(p.detach());
  if (options_.backoff_on_oom) state_.pending.push_back(std::move(update));
  else apply_update(update);
}

void TrainingRun::apply_update(const PendingUpdate& update) {
  const NoGradGuard no_grad;
  const auto [logged, units] = model_.logged_loss(update.losses, update.units, update.samples);
  state_.epoch_loss.add(logged, units);
  model_.update_metrics(model_.metrics_, update.predictions, update.targets, update.losses);
}

void TrainingRun::apply_held_back_updates() {
  for (const PendingUpdate& u : state_.pending) apply_update(u);
  state_.pending.clear();
}

}  // namespace accrue::detail
