// The training loop: epochs, windows, and each window's micro-batches (forward, weighted loss,
// backward) and close, with the events around them.

#include <cmath>
#include <deque>

#include "training_run.hpp"
#include "../layers/augmentation.hpp"
#include "../../framework/autograd/autograd.hpp"
#include "../../framework/core/log.hpp"
#include "../../framework/ops/ops.hpp"
#include "../../framework/training/window_close.hpp"

namespace accrue::detail {

// The tutorials' loop (examples/00_manual_loop.cpp): for each window of the epoch, for each of its
// micro-batches the batch, forward, the summed loss times its weight, backward; the window's last
// micro-batch closes it with the optimizer step. Accrue's extras are the named calls around them.
History TrainingRun::fit() {
  begin_training();
  for (int epoch = state_.epoch; epoch < options_.epochs && !context_.stop_requested; ++epoch) {
    const TrainingModeGuard training{model_, true};
    std::deque<EpochWindow> windows = begin_epoch(epoch);  // from where a checkpoint stopped
    while (!windows.empty() && !context_.stop_requested) {
      const EpochWindow window = std::move(windows.front());
      windows.pop_front();
      for (const MicroBatchSlot& slot : window.micro_batches) {
        StepRecord record = start_record(slot);
        const std::optional<Batch> batch = next_batch(slot, record);  // none for the rest of a dropped window
        try {
          if (batch) {
            const layers::AugmentationKeys keys{data_.loader().options().seed, epoch, batch->samples};  // random layers' draws
            const MicroBatchLoss loss = forward(*batch, record);  // the model, the summed loss, an inf or NaN guard
            if (!skips_backward()) backward(slot, weighted_loss(slot, loss, record));
            update_metrics(loss, *batch);
          }
        } catch (OutOfMemory& e) {
          windows = back_off(e, record);  // this window again with half the micro-batch, or what would fit
          break;
        } catch (Error& e) {
          e.prepend(error_prefix(record));
          throw;
        }
        if (slot.closes_window) step(slot, record);  // unscale, clip, learning rate, optimizer step, zero
        else reduce_micro_batch();                   // sharded gradients reduced every micro-batch (ZeRO-2)
        end_micro_batch(slot, record);               // the callbacks; a checkpoint or a stop between micro-batches
      }
    }
    end_epoch(epoch);
  }
  return end_training();
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

// After a micro-batch that does not close its window: a reducer of Sharding::gradients_each_micro_batch
// reduce-scatters its gradients, on every process, whether it trained the micro-batch or not.
void TrainingRun::reduce_micro_batch() {
  if (distributed::Reducer* reducer = processes_.reducer()) reducer->end_micro_batch();
}

// Micro-batch `slot`'s batch (this process's share), or none when it is not trained: the rest of a
// window a NanGuard or the loss scaler dropped, or this process's empty share of a short last
// micro-batch. Where layers share batch statistics over the processes every process trains every
// micro-batch, so that all make the same collective calls.
std::optional<Batch> TrainingRun::next_batch(const MicroBatchSlot& slot, StepRecord& record) {
  const bool every_micro_batch = modes_->shares_statistics();
  if (state_.window_poisoned && !every_micro_batch) return std::nullopt;
  const double waited = data_.waited_seconds();
  Batch batch = data_.get(slot.index);
  record.data_wait = data_.waited_seconds() - waited;
  record.micro_batch_samples = batch.size();
  // Every micro-batch's weight needs its whole window's units, over all processes.
  for (LossUnits& units : units_) units.of_window(slot, data_.loader());
  if (units_[0].counts_tokens()) record.window_tokens = units_[0].window();
  if (const GradScaler* scaler = context_.scaler) record.loss_scale = scaler->scale();
  if (batch.size() == 0 && !every_micro_batch) return std::nullopt;
  return batch;
}

// The micro-batch's forward pass and summed losses (under autocast with mixed precision); its mean
// loss goes on the record (for several outputs the weighted sum of theirs), and an inf or NaN loss
// to handle_nonfinite_loss.
TrainingRun::MicroBatchLoss TrainingRun::forward(const Batch& batch, StepRecord& record) {
  MicroBatchLoss loss;
  for (const LossUnits& units : units_) loss.units.push_back(units.of(batch));
  if (units_[0].counts_tokens()) record.micro_batch_tokens = loss.units[0];
  {
    const StepModes::Pass pass = modes_->forward();
    loss.predictions = model_.forward(batch.inputs);
    loss.sums = micro_batch_losses(batch, loss.predictions, record);
  }
  for (const Tensor& sum : loss.sums) loss.values.push_back(sum.item());
  for (const double v : loss.values) loss.value += v;
  const auto [logged, units] = model_.logged_loss(loss.values, loss.units, batch.size());
  if (units > 0) record.loss = logged / static_cast<double>(units);
  if (!std::isfinite(loss.value) && !state_.window_poisoned) handle_nonfinite_loss(loss.value, record);
  return loss;
}

// A window a NanGuard or the loss scaler dropped takes no more gradients, except where every
// process must make the same collective calls (next_batch).
bool TrainingRun::skips_backward() const { return state_.window_poisoned && !modes_->shares_statistics(); }

// What backward starts from: each output's summed loss times its loss weight by the rule of
// accumulation over that output's units (framework/optim/accumulation.hpp; the first output's
// kept on the record), its weight in compile(), and the loss scale of float16 loss scaling, which
// the window's close undoes; added over the outputs.
Tensor TrainingRun::weighted_loss(const MicroBatchSlot& slot, const MicroBatchLoss& loss, StepRecord& record) const {
  const double scale = context_.scaler ? context_.scaler->scale() : 1.0;
  return model_.weighted_loss(loss.sums, [&](std::size_t o) {
    const double weight = loss_weight(accumulation_.options.normalization,
                                      {.units = loss.units[o],
                                       .window_units = units_[o].window(),
                                       .window_micro_batches = slot.window_micro_batches,
                                       .processes = processes_.size(),
                                       .summed_loss = model_.losses()[o].loss.reduction() == Reduction::sum});
    if (o == 0) record.loss_weight = weight;
    return weight;
  }, scale);
}

// Backward of the weighted loss, under the step's modes (the window's last backward hands the
// completed gradients to the processes' reducer and multiplies deferred weight gradients).
void TrainingRun::backward(const MicroBatchSlot& slot, const Tensor& weighted_loss) {
  const StepModes::Pass pass = modes_->backward(slot.closes_window);
  weighted_loss.backward();
}

// After micro-batch `slot` (and the step when it closed its window): the callbacks, and between
// micro-batches a checkpoint or a stop on a signal.
void TrainingRun::end_micro_batch(const MicroBatchSlot& slot, const StepRecord& record) {
  if (slot.closes_window) apply_held_back_updates();
  const Logs running = metric_logs(state_.epoch_loss, model_.metrics_);
  ++state_.micro_batches;
  for (Callback* c : *callbacks_) c->on_micro_batch_end(record, running);
  if (slot.closes_window) {
    for (Callback* c : *callbacks_) c->on_optimizer_step(record);
    if (context_.stop_requested) return;
  }
  between_micro_batches(slot);
}

void TrainingRun::begin_training() {
  for (Callback* c : *callbacks_) c->on_train_begin(context_);
  if (const std::optional<TrainingCheckpoint>& checkpoint = checkpoints_.resumed())
    checkpoint->restore_callbacks(saved_callbacks());
  checkpoints_.start_clock();
  if (options_.stop_on_signal) stop_signal_.emplace();
  const MemoryStats at_start = memory_stats(model_.device());
  live_besides_model_ = at_start.live_total - at_start.live_of(MemoryCategory::parameters) -
                        at_start.live_of(MemoryCategory::optimizer_state) -
                        at_start.live_of(MemoryCategory::gradients);
  // In a distributed run the window's last backward multiplies what waits into the buckets before
  // it reports a gradient complete; a process whose last micro-batch is empty flushes at the close.
  modes_.emplace(StepModesOptions{
      .autocast = context_.amp_dtype,
      .statistics_group = processes_.statistics_group(),
      .reducer = processes_.reducer(),
      // Every micro-batch's gradients complete when each is reduced on its own.
      .defer_weight_gradients = model_.defers_weight_gradients(accumulation_.schedule.is_set(), accumulation_.options) &&
                                !(processes_.reducer() && processes_.reducer()->reduces_each_micro_batch()),
      .keep_packs = context_.amp_dtype && accumulation_.schedule.is_set()});
}

// The epoch's windows still to train: all of them, or from the micro-batch a checkpoint taken
// inside the epoch stopped at.
std::deque<EpochWindow> TrainingRun::begin_epoch(int epoch) {
  state_.epoch = epoch;
  const bool continuing = checkpoints_.take_continued_epoch();
  if (!continuing) {
    state_.epoch_loss.reset();
    for (Metric& m : model_.metrics_) m.reset();
  }
  reset_peak_memory(model_.device());
  for (Callback* c : *callbacks_) c->on_epoch_begin(epoch);
  const std::int64_t from = continuing ? static_cast<std::int64_t>(state_.next_slot) : 0;
  const std::vector<EpochWindow> windows = data_.begin_epoch(epoch, from);
  return {windows.begin(), windows.end()};
}

// The window's close: unscale, clip, learning rate, optimizer step, gradients zeroed, in the order
// written once in framework/training/window_close.hpp.
void TrainingRun::step(const MicroBatchSlot& slot, StepRecord& record) {
  try {
    accrue::close_window({.parameters = parameters_,
                          .optimizer = *optimizer_,
                          .recipe = model_.recipe(),
                          .scaler = model_.scaler(),
                          .schedule = schedule_,
                          .base_lr = context_.base_lr,
                          .lr_factor = context_.lr_factor,
                          .batch_factor = batch_factor(slot),
                          .track_norm = callbacks_->track_grad_norm(),
                          .reducer = processes_.reducer(),
                          .requests = {.stop = stop_signal_ && stop_signal_->received() != 0,
                                       .checkpoint = checkpoints_.due_by_clock()},
                          .shards = processes_.shards(),
                          .deferred = modes_->deferred()},
                         state_.window_poisoned, context_.optimizer_steps, record);
  } catch (Error& e) {
    e.prepend(error_prefix(record));
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
  const std::int64_t warmup = data_.plan().steps_after_epochs(recipe.reference_options().warmup_epochs);
  const std::int64_t step = context_.optimizer_steps;
  if (step >= warmup) return full;
  return 1.0 + (full - 1.0) * static_cast<double>(step) / static_cast<double>(warmup);
}

// Between micro-batch `slot` and the next of the epoch (its end has its own checkpoint and signal
// check): a checkpoint when one is due, then a stop when a signal came. A distributed run does both
// only at a window's close, where its gradients are summed and cleared and its processes agreed on
// them.
void TrainingRun::between_micro_batches(const MicroBatchSlot& slot) {
  const std::int64_t next = slot.index + 1;
  if (next >= data_.epoch_micro_batches()) return;
  checkpoints_.count_micro_batches(state_.micro_batches);
  const distributed::Reducer* reducer = processes_.reducer();
  if (reducer && !slot.closes_window) return;
  const bool by_clock = reducer ? reducer->agreed().checkpoint : checkpoints_.due_by_clock();
  if (checkpoints_.owed() || by_clock) {
    state_.next_slot = static_cast<std::size_t>(next);
    write_checkpoint();
  }
  stop_if_signalled(state_.epoch, static_cast<std::size_t>(next));
}

void TrainingRun::end_epoch(int epoch) {
  Logs logs = metric_logs(state_.epoch_loss, model_.metrics_);
  processes_.aggregate_metrics(state_.epoch_loss, model_.metrics_, logs);
  // Buffers each process updates from its own share of the samples (the running statistics of a
  // BatchNorm without .sync): every process validates and checkpoints one model.
  processes_.take_rank_0s(model_.named_buffers());
  processes_.check_replicas(model_, epoch);
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
  for (Callback* c : *callbacks_) c->on_epoch_end(epoch, logs);
  state_.history.append(logs, context_.epoch_memory);
  if (checkpoints_.writes()) {
    state_.epoch = epoch + 1;
    state_.next_slot = 0;
    write_checkpoint();
  }
  stop_if_signalled(epoch, static_cast<std::size_t>(data_.epoch_micro_batches()));
}

History TrainingRun::end_training() {
  modes_.reset();
  // Gradients of a window cut off by an early stop are not applied.
  optimizer_->zero_grad();
  optimizer_->set_lr(context_.base_lr);
  const auto& average = model_.recipe_.weight_average();
  if (average && average->overwrite_at_end) optimizer_->load_average_into_parameters();
  const History& history = state_.history;
  for (Callback* c : *callbacks_) c->on_train_end(history.epochs() ? history.logs().back() : Logs{});
  return history;
}

// "epoch 2/5, batch 7/938 (samples ...; micro-batch 3/4 of optimizer step 12): ", put before an
// error raised while training the micro-batch of `record`.
std::string TrainingRun::error_prefix(const StepRecord& record) const {
  const std::int64_t first = record.micro_batch * state_.batch_size;
  return fmt::format("epoch {}/{}, batch {}/{} (samples {}..{} of the epoch; micro-batch {}/{} of optimizer step {}): ",
                     record.epoch + 1, options_.epochs, record.micro_batch + 1, data_.plan().micro_batches_per_epoch(), first,
                     first + record.micro_batch_samples - 1, record.position + 1, record.window_micro_batches,
                     record.window + 1);
}

}  // namespace accrue::detail
