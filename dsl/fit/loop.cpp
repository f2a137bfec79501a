// The training loop: epochs, windows, and each window's micro-batches (forward, weighted loss,
// backward) and close, with the events around them.

#include <cmath>

#include "accrue/dsl/fit/training_run.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/log.hpp"
#include "accrue/framework/ops.hpp"
#include "accrue/framework/training/window_close.hpp"

namespace accrue::detail {

// The tutorials' loop, window by window: for each micro-batch of a window forward, the weighted
// loss and backward, then the window's close (clip, step, schedule). Accrue's extras are named:
// checkpoints and signals between micro-batches, out-of-memory back-off redoing a window.
History TrainingRun::fit() {
  begin();
  for (int epoch = state_.epoch; epoch < options_.epochs && !context_.stop_requested; ++epoch) {
    const TrainingModeGuard mode{model_, true};
    for (WindowSlots w = begin_epoch(epoch); !w.empty() && !context_.stop_requested; w = window_from(w.end))
      train_window(w);
    end_epoch(epoch);
  }
  return finish();
}

// A window, trained again from its first sample with micro-batches half as large whenever one of
// them runs out of memory and the run backs off: `window` is then the slots of the redone window in
// the epoch's new plan.
void TrainingRun::train_window(WindowSlots& window) {
  while (const std::optional<WindowSlots> smaller = train_micro_batches(window)) window = *smaller;
}

// The window's micro-batches and their events (the last one closes the window); the window to
// train again after an out-of-memory back-off.
std::optional<TrainingRun::WindowSlots> TrainingRun::train_micro_batches(WindowSlots window) {
  for (std::size_t k = window.begin; k < window.end; ++k) {
    StepRecord record = start_record(slots_[k]);
    if (std::optional<WindowSlots> smaller = forward_backward(k, record)) return smaller;
    end_micro_batch(k, record);
  }
  return std::nullopt;
}

// After micro-batch k's backward: the window's close when it is the last, the callbacks, and
// between micro-batches a checkpoint or a stop on a signal.
void TrainingRun::end_micro_batch(std::size_t k, StepRecord& record) {
  const MicroBatchSlot slot = slots_[k];
  if (slot.closes_window) apply_held_back_updates();
  const Logs running = metric_logs(state_.epoch_loss, model_.metrics_);
  ++state_.micro_batches;
  if (slot.closes_window) close_window(slot, record);
  for (Callback* c : callbacks_) c->on_micro_batch_end(record, running);
  if (slot.closes_window) {
    for (Callback* c : callbacks_) c->on_optimizer_step(record);
    if (context_.stop_requested) return;
  }
  between_micro_batches(k);
}

// The window of the epoch's slots that starts at slot k (empty past the last).
TrainingRun::WindowSlots TrainingRun::window_from(std::size_t k) const {
  std::size_t end = k;
  while (end < slots_.size() && !slots_[end].closes_window) ++end;
  return {k, std::min(end + 1, slots_.size())};
}

void TrainingRun::begin() {
  for (Callback* c : callbacks_) c->on_train_begin(context_);
  if (checkpoint_) checkpoint_->restore_callbacks(saved_callbacks());
  last_checkpoint_ = std::chrono::steady_clock::now();
  if (options_.stop_on_signal) stop_signal_.emplace();
  const MemoryStats at_start = memory_stats(model_.device());
  live_besides_model_ = at_start.live_total - at_start.live_of(MemoryCategory::parameters) -
                        at_start.live_of(MemoryCategory::optimizer_state) -
                        at_start.live_of(MemoryCategory::gradients);
  // In a distributed run the window's last backward multiplies what waits into the buckets before
  // it reports a gradient complete; a process whose last micro-batch is empty flushes at the close.
  modes_.emplace(StepModesOptions{
      .autocast = amp_,
      .statistics_group = statistics_group_,
      .reducer = reducer_.get(),
      .defer_weight_gradients = model_.defers_weight_gradients(accumulation_.is_set(), accumulate_),
      .keep_packs = amp_ && accumulation_.is_set()});
}

TrainingRun::WindowSlots TrainingRun::begin_epoch(int epoch) {
  state_.epoch = epoch;
  loader_->set_epoch(epoch);
  batches_->reset();
  const bool continuing = std::exchange(continue_epoch_, false);
  if (!continuing) {
    state_.epoch_loss.reset();
    for (Metric& m : model_.metrics_) m.reset();
  }
  reset_peak_memory(model_.device());
  for (Callback* c : callbacks_) c->on_epoch_begin(epoch);
  slots_ = plan_->epoch_slots(epoch);
  return window_from(continuing ? state_.next_slot : 0);
}

StepRecord TrainingRun::start_record(const MicroBatchSlot& slot) const {
  StepRecord record;
  record.epoch = state_.epoch;
  record.micro_batch = slot.index;
  record.window = slot.window;
  record.position = slot.position;
  record.window_micro_batches = slot.window_micro_batches;
  record.window_samples = slot.window_samples;
  record.optimizer_step = context_.optimizer_steps;
  return record;
}

// Forward, the weighted loss and backward of micro-batch `k`; after an out-of-memory back-off, the
// window to train again.
std::optional<TrainingRun::WindowSlots> TrainingRun::forward_backward(std::size_t k, StepRecord& record) {
  // The rest of a window a NanGuard or the loss scaler dropped is not trained, except where layers
  // share batch statistics over the processes: then every process runs every micro-batch, also an
  // empty share or a dropped window's, so that all make the same collective calls.
  const bool every_micro_batch = modes_->shares_statistics();
  if (state_.window_poisoned && !every_micro_batch) return std::nullopt;
  const MicroBatchSlot slot = slots_[k];
  const double waited = batches_->waited_seconds();
  const Batch batch = batches_->get(slot.index, k + 1 < slots_.size() ? std::optional{slots_[k + 1].index} : std::nullopt);
  record.data_wait = batches_->waited_seconds() - waited;
  record.micro_batch_samples = batch.size();
  // The window's units over all processes, counted when it opens, or when a run resumes inside it:
  // every micro-batch's weight needs them all.
  if (slot.position == 0 || window_units_of_ != slot.window) {
    window_units_ = window_units(slot);
    window_units_of_ = slot.window;
  }
  const std::int64_t units = micro_batch_units(slot, batch.size());
  if (counts_tokens_) {
    record.window_tokens = window_units_;
    record.micro_batch_tokens = units;
  }
  if (scaler_) record.loss_scale = scaler_->scale();
  if (batch.size() == 0 && !every_micro_batch) return std::nullopt;  // this process's share of a short last micro-batch
  try {
    Tensor prediction, loss_sum;
    {
      const StepModes::Pass pass = modes_->forward();
      prediction = model_.forward(batch.inputs);
      loss_sum = micro_batch_loss(slot, prediction, batch.targets, record);
    }
    const double loss_value = loss_sum.item();
    if (units > 0) record.loss = loss_value / static_cast<double>(units);
    if (!std::isfinite(loss_value) && !state_.window_poisoned) handle_nonfinite_loss(loss_value, record);
    if (state_.window_poisoned && !every_micro_batch) return std::nullopt;
    record.loss_weight = loss_weight(accumulate_.normalization,
                                     {.units = units,
                                      .window_units = window_units_,
                                      .window_micro_batches = slot.window_micro_batches,
                                      .processes = communicator_->size(),
                                      .summed_loss = model_.loss().reduction() == Reduction::sum});
    // With loss scaling the summed loss is also multiplied by the scale, undone once per step.
    const double scale = scaler_ ? scaler_->scale() : 1.0;
    {
      const StepModes::Pass pass = modes_->backward(slot.closes_window);
      (loss_sum * static_cast<float>(record.loss_weight * scale)).backward();
    }
    if (std::isfinite(loss_value) && !state_.window_poisoned && batch.size() > 0)
      update_metrics(prediction, batch.targets, loss_value, units);
  } catch (OutOfMemory& e) {
    return back_off(e, k, record);
  } catch (Error& e) {
    e.prepend(where(slot, record.micro_batch_samples));
    throw;
  }
  return std::nullopt;
}

// The order of a window's close is written once, in framework/training/window_close.hpp.
void TrainingRun::close_window(const MicroBatchSlot& slot, StepRecord& record) {
  try {
    accrue::close_window({.parameters = parameters_,
                          .optimizer = *optimizer_,
                          .recipe = model_.recipe(),
                          .scaler = scaler_,
                          .schedule = schedule_,
                          .base_lr = context_.base_lr,
                          .lr_factor = context_.lr_factor,
                          .batch_factor = batch_factor(slot),
                          .track_norm = track_grad_norm_,
                          .reducer = reducer_.get(),
                          .requests = {.stop = stop_signal_ && stop_signal_->received() != 0,
                                       .checkpoint = checkpoint_due_by_clock()},
                          .deferred = modes_->deferred()},
                         state_.window_poisoned, context_.optimizer_steps, record);
  } catch (Error& e) {
    e.prepend(where(slot, record.micro_batch_samples));
    throw;
  }
  state_.window_poisoned = false;
}

// The learning rate's scaling to the window's planned effective batch (Recipe::reference_batch),
// ramped from 1 over the gradual warmup's steps.
double TrainingRun::batch_factor(const MicroBatchSlot& slot) const {
  const optim::Recipe& recipe = model_.recipe();
  if (!recipe.reference_samples()) return 1.0;
  const double full = recipe.batch_scaling(state_.batch_size * context_.processes * slot.window_planned);
  const std::int64_t warmup = plan_->steps_after_epochs(recipe.reference_options().warmup_epochs);
  const std::int64_t step = context_.optimizer_steps;
  if (step >= warmup) return full;
  return 1.0 + (full - 1.0) * static_cast<double>(step) / static_cast<double>(warmup);
}

// Between micro-batches k and k + 1 of an epoch (its end has its own checkpoint and signal check):
// a checkpoint when one is due, then a stop when a signal came. A distributed run does both only at
// a window's close, where its gradients are summed and cleared and its processes agreed on them.
void TrainingRun::between_micro_batches(std::size_t k) {
  if (k + 1 >= slots_.size()) return;
  checkpoint_owed_ = checkpoint_owed_ || (!checkpointing_.dir.empty() && checkpointing_.every_micro_batches > 0 &&
                                          state_.micro_batches % checkpointing_.every_micro_batches == 0);
  if (reducer_ && !slots_[k].closes_window) return;
  const bool by_clock = reducer_ ? reducer_->agreed().checkpoint : checkpoint_due_by_clock();
  if (checkpoint_owed_ || by_clock) {
    state_.next_slot = k + 1;
    write_checkpoint();
  }
  stop_if_signalled(state_.epoch, k + 1);
}

void TrainingRun::end_epoch(int epoch) {
  Logs logs = metric_logs(state_.epoch_loss, model_.metrics_);
  aggregate_metrics(logs);
  share_buffers();
  check_replicas(epoch);
  context_.epoch_memory = memory_stats(model_.device());
  if (validation_) try {
      // Validation of the averaged weights (.ema(), .swa()).
      const auto& average = model_.recipe_.weight_average();
      const optim::AverageInParameters averaged{*optimizer_, average && average->validate};
      const Evaluation val =
          model_.evaluate(*validation_, {.batch_size = state_.batch_size, .distributed = options_.distributed});
      logs.set_all(val.logs, "val_");
    } catch (const Interrupted& e) {
      stop_in_validation(epoch, e);
    }
  schedule_.on_epoch_end(logs);
  for (Callback* c : callbacks_) c->on_epoch_end(epoch, logs);
  state_.history.append(logs, context_.epoch_memory);
  if (!checkpointing_.dir.empty()) {
    state_.epoch = epoch + 1;
    state_.next_slot = 0;
    write_checkpoint();
  }
  stop_if_signalled(epoch, slots_.size());
}

History TrainingRun::finish() {
  modes_.reset();
  // Gradients of a window cut off by an early stop are not applied.
  optimizer_->zero_grad();
  optimizer_->set_lr(context_.base_lr);
  const auto& average = model_.recipe_.weight_average();
  if (average && average->overwrite_at_end) optimizer_->load_average_into_parameters();
  const History& history = state_.history;
  for (Callback* c : callbacks_) c->on_train_end(history.epochs() ? history.logs().back() : Logs{});
  return history;
}

// "epoch 2/5, batch 7/938 (samples ...; micro-batch 3/4 of optimizer step 12): ", put before an
// error raised while training a micro-batch.
std::string TrainingRun::where(const MicroBatchSlot& slot, std::int64_t samples) const {
  const std::int64_t first = slot.index * state_.batch_size;
  return fmt::format("epoch {}/{}, batch {}/{} (samples {}..{} of the epoch; micro-batch {}/{} of optimizer step {}): ",
                     state_.epoch + 1, options_.epochs, slot.index + 1, plan_->micro_batches_per_epoch(), first,
                     first + samples - 1, slot.position + 1, slot.window_micro_batches, slot.window + 1);
}

}  // namespace accrue::detail
