// The run's side of its checkpoints (RunCheckpoints, run_checkpoints.hpp, keeps the folder, the
// timing and the files): what must match to continue one, restoring it, writing one of the run's
// parts, and stopping on SIGINT or SIGTERM with one.

#include <csignal>

#include "training_run.hpp"
#include "../../framework/core/log.hpp"

namespace accrue::detail {

// What must be the same for a run to continue from a checkpoint and repeat the run that wrote it.
RunSignature run_signature(const Model& model, const Dataset& train, const TrainerOptions& options,
                           const RunAccumulation& accumulation, const LrSchedule& schedule) {
  std::string metric_names;
  for (const Metric& m : model.metrics()) metric_names += (metric_names.empty() ? "" : ", ") + m.name();
  return {{"training samples", std::to_string(train.size())},
          {"sample shape", train.layout().inputs.size() == 1 ? train.sample_shape().str() : train.layout().str()},
          {"training data", train.fingerprint()},
          {"epochs", std::to_string(options.epochs)},
          {"micro-batch", std::to_string(options.batch_size)},
          {"accumulation", fmt::format("{} (last window: {}, normalization: {})", accumulation.schedule.str(),
                                       last_window_name(accumulation.options.last_window),
                                       normalization_name(accumulation.options.normalization))},
          {"recipe", model.recipe().str()},
          {"loss", options.class_weight.empty() ? model.losses_str()
                                                : model.losses_str() + ", class_weight " + class_weight_str(options.class_weight)},
          {"metrics", metric_names.empty() ? "(none)" : metric_names},
          {"schedule", schedule.str()},
          {"shuffle", options.shuffle ? "true" : "false"},
          {"seed", options.seed ? std::to_string(*options.seed) : "drawn from the model's generator"},
          {"drop_last", options.drop_last ? "true" : "false"},
          {"backoff_on_oom", options.backoff_on_oom ? "true" : "false"}};
}

// The micro-batch of each process that continues `checkpoint`. On another number of processes
// than wrote it, the global micro-batch stays the writers' and is shared out anew, so that the plan
// (windows, their samples and order, the effective batch) is the run's own.
std::int64_t resumed_micro_batch(const TrainingCheckpoint& checkpoint, const distributed::Communicator& processes) {
  const int writers = checkpoint.processes(), n = processes.size();
  if (writers == n) return checkpoint.batch_size();
  const std::int64_t global = checkpoint.batch_size() * writers;
  if (global % n != 0) {
    std::string valid;
    for (std::int64_t d = 1; d <= global && valid.size() < 200; ++d)
      if (global % d == 0) valid += fmt::format("{}{}", valid.empty() ? "" : ", ", d);
    throw ValueError(fmt::format("checkpoint {} was written by {} processes with micro-batches of {}: {} processes "
                                 "cannot share their global micro-batch of {} evenly; continue it on {} processes",
                                 checkpoint.path(), writers, checkpoint.batch_size(), n, global, valid));
  }
  if (processes.rank() == 0)
    log::info("continuing a run of {} process{} on {}: micro-batches of {} per process instead of {}, so that the "
              "global micro-batch stays {} and the run keeps its windows, samples and order",
              writers, writers == 1 ? "" : "es", n, global / n, checkpoint.batch_size(), global);
  return global / n;
}

void TrainingRun::resume() {
  const TrainingCheckpoint& checkpoint = *checkpoints_.resumed();
  RunParts p = run_parts();
  checkpoint.restore(p, processes_.rank(), processes_.size());
  context_.resumed = true;
  context_.initial_epoch = state_.epoch;
  checkpoints_.set_continues_epoch(state_.next_slot > 0);
  if (processes_.rank() != 0) return;
  if (state_.epoch >= options_.epochs || context_.stop_requested)
    log::info("{} is the checkpoint of a finished run ({} epoch{} trained); nothing is left to train",
              checkpoint.path(), state_.history.epochs(), state_.history.epochs() == 1 ? "" : "s");
  else if (const std::size_t slots = data_.plan().epoch_slots(state_.epoch).size(); state_.next_slot == slots)
    log::info("resuming from {}: epoch {}/{} with its {} micro-batches trained, at its end (validation and callbacks), "
              "{} optimizer steps done",
              checkpoint.path(), state_.epoch + 1, options_.epochs, slots, context_.optimizer_steps);
  else
    log::info("resuming from {}: epoch {}/{}, micro-batch {}/{}, {} optimizer steps done", checkpoint.path(),
              state_.epoch + 1, options_.epochs, state_.next_slot + 1, slots, context_.optimizer_steps);
}

// Checkpoints: at each epoch's end, and every so many micro-batches or seconds in between. Process
// 0 writes a distributed run's, with every process's own generators and running metrics.
void TrainingRun::write_checkpoint() {
  // An open window's gradients are saved whole.
  if (DeferredWeightGradients* deferred = modes_ ? modes_->deferred() : nullptr) deferred->flush();
  checkpoints_.write(run_parts(), state_.micro_batches, saved_callbacks(), processes_.all());
}

// The callbacks whose state a checkpoint keeps: the user's (the progress bar and explanations keep
// none, and only process 0 of a distributed run has them).
std::vector<Callback*> TrainingRun::saved_callbacks() const {
  std::vector<Callback*> user;
  for (const CallbackHandle& c : options_.callbacks) user.push_back(c.get());
  return user;
}

RunParts TrainingRun::run_parts() {
  return {model_, *optimizer_, model_.scaler(), schedule_, context_, model_.metrics_, state_, &placement_};
}

// The signal that stops the run, or 0. A distributed run stops when any process received one: they
// agreed on it at the last window's close.
int TrainingRun::stop_signal() const {
  const int mine = stop_signal_ ? stop_signal_->received() : 0;
  const distributed::Reducer* reducer = processes_.reducer();
  if (!reducer) return mine;
  return reducer->agreed().stop ? (mine != 0 ? mine : SIGTERM) : 0;
}

// SIGINT or SIGTERM: stop between micro-batches (or at an epoch's end), with a checkpoint when
// there is a folder for it. `next` is the epoch's next micro-batch; their count at the epoch's end.
void TrainingRun::stop_if_signalled(int epoch, std::size_t next) {
  const int signal = stop_signal();
  if (signal == 0) return;
  const auto count = static_cast<std::size_t>(data_.epoch_micro_batches());
  const std::string at = next < count ? fmt::format("after micro-batch {}/{} of epoch {}/{}", next, count, epoch + 1,
                                                    options_.epochs)
                                      : fmt::format("at the end of epoch {}/{}", epoch + 1, options_.epochs);
  if (checkpoints_.writes() && next < count) {
    state_.next_slot = next;
    write_checkpoint();
  }
  throw checkpoints_.stopped(signal, at, context_.optimizer_steps);
}

// A signal during the validation at an epoch's end stops at once, not after the whole pass: the
// checkpoint then holds the epoch with all its micro-batches trained and its end (validation,
// callbacks) still to come, which a continued run does first. (A distributed run validates on:
// its processes agree on a stop only at a window's close.)
void TrainingRun::stop_in_validation(int epoch, const Interrupted& stopped) {
  if (checkpoints_.writes()) {
    state_.next_slot = static_cast<std::size_t>(data_.epoch_micro_batches());
    write_checkpoint();
  }
  throw checkpoints_.stopped(stopped.signal(),
                             fmt::format("during the validation after epoch {}/{}", epoch + 1, options_.epochs),
                             context_.optimizer_steps);
}

}  // namespace accrue::detail
