// Checkpoints (what must match to continue one, finding and restoring it, writing them), and
// stopping on SIGINT or SIGTERM with one.

#include <csignal>
#include <filesystem>

#include "accrue/dsl/fit/training_run.hpp"
#include "accrue/framework/files.hpp"
#include "accrue/framework/log.hpp"

namespace accrue::detail {

// What must be the same for a run to continue from a checkpoint and repeat the run that wrote it.
RunSignature run_signature(const Sequential& model, const Dataset& train, const TrainerOptions& options,
                           const AccumulationSchedule& accumulation, const AccumulateOptions& accumulate,
                           const LrSchedule& schedule) {
  std::string metric_names;
  for (const Metric& m : model.metrics()) metric_names += (metric_names.empty() ? "" : ", ") + m.name();
  return {{"training samples", std::to_string(train.size())},
          {"sample shape", train.sample_shape().str()},
          {"training data", train.fingerprint()},
          {"epochs", std::to_string(options.epochs)},
          {"micro-batch", std::to_string(options.batch_size)},
          {"accumulation", fmt::format("{} (last window: {}, normalization: {})", accumulation.str(),
                                       last_window_name(accumulate.last_window),
                                       normalization_name(accumulate.normalization))},
          {"recipe", model.recipe().str()},
          {"loss", options.class_weight.empty() ? model.loss().name()
                                                : model.loss().name() + ", class_weight " + class_weight_str(options.class_weight)},
          {"metrics", metric_names.empty() ? "(none)" : metric_names},
          {"schedule", schedule.str()},
          {"shuffle", options.shuffle ? "true" : "false"},
          {"seed", options.seed ? std::to_string(*options.seed) : "drawn from the model's generator"},
          {"drop_last", options.drop_last ? "true" : "false"},
          {"backoff_on_oom", options.backoff_on_oom ? "true" : "false"}};
}

// The checkpoint to continue from: `resume_from` (a file, or the newest in a folder), else the
// newest in the checkpoint folder when resuming is on. A newest one in a folder that is damaged or
// cannot be read is skipped with a warning; a named file that is, or a folder of only such ones, is
// an error.
std::optional<TrainingCheckpoint> find_checkpoint(const std::string& resume_from, const CheckpointOptions& options) {
  std::string dir = options.resume ? options.dir : std::string{};
  if (!resume_from.empty()) {
    if (!is_folder(resume_from, "resume_from")) return TrainingCheckpoint::read(resume_from);
    dir = resume_from;
  }
  if (dir.empty()) return std::nullopt;
  const std::vector<std::string> found = checkpoints_in(dir);
  if (found.empty()) {
    if (!resume_from.empty())
      throw IoError(fmt::format("resume_from: {} holds no training checkpoint (checkpoint-<n>.safetensors)", dir));
    return std::nullopt;
  }
  std::string problems;
  for (const std::string& path : found) {
    try {
      return TrainingCheckpoint::read(path);
    } catch (const IoError& e) {
      log::warning("{}; trying the one before it", e.what());
      problems += fmt::format("\n  {}", e.what());
    }
  }
  throw IoError(fmt::format("no training checkpoint in {} can be used, so the run cannot continue; move them away to "
                            "start afresh:{}",
                            dir, problems));
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
  RunParts p = parts();
  checkpoint_->restore(p, communicator_->rank(), communicator_->size());
  context_.resumed = true;
  context_.initial_epoch = state_.epoch;
  continue_epoch_ = state_.next_slot > 0;
  if (communicator_->rank() != 0) return;
  if (state_.epoch >= options_.epochs || context_.stop_requested)
    log::info("{} is the checkpoint of a finished run ({} epoch{} trained); nothing is left to train",
              checkpoint_->path(), state_.history.epochs(), state_.history.epochs() == 1 ? "" : "s");
  else if (const std::size_t slots = plan_->epoch_slots(state_.epoch).size(); state_.next_slot == slots)
    log::info("resuming from {}: epoch {}/{} with its {} micro-batches trained, at its end (validation and callbacks), "
              "{} optimizer steps done",
              checkpoint_->path(), state_.epoch + 1, options_.epochs, slots, context_.optimizer_steps);
  else
    log::info("resuming from {}: epoch {}/{}, micro-batch {}/{}, {} optimizer steps done", checkpoint_->path(),
              state_.epoch + 1, options_.epochs, state_.next_slot + 1, slots, context_.optimizer_steps);
}

// Checkpoints: at each epoch's end, and every so many micro-batches or seconds in between. Process
// 0 writes a distributed run's, with every process's own generators and running metrics.
void TrainingRun::write_checkpoint() {
  // An open window's gradients are saved whole.
  if (DeferredWeightGradients* deferred = modes_ ? modes_->deferred() : nullptr) deferred->flush();
  last_checkpoint_path_ =
      (std::filesystem::path(checkpointing_.dir) / checkpoint_name(state_.micro_batches)).string();
  std::vector<std::string> rank_states;
  if (communicator_->size() > 1) {
    const std::string mine = rank_state(parts());
    for (int r = 0; r < communicator_->size(); ++r) rank_states.push_back(communicator_->broadcast(mine, r));
  }
  if (communicator_->rank() == 0) {
    write_training_checkpoint(last_checkpoint_path_, parts(), signature_, saved_callbacks(), rank_states);
    keep_newest_checkpoints(checkpointing_.dir, checkpointing_.keep);
  }
  checkpoint_owed_ = false;
  last_checkpoint_ = std::chrono::steady_clock::now();
}

bool TrainingRun::checkpoint_due_by_clock() const {
  return !checkpointing_.dir.empty() && checkpointing_.every_seconds > 0 &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - last_checkpoint_).count() >=
             checkpointing_.every_seconds;
}

// The callbacks whose state a checkpoint keeps: the user's (the progress bar and explanations keep
// none, and only process 0 of a distributed run has them).
std::vector<Callback*> TrainingRun::saved_callbacks() const {
  std::vector<Callback*> user;
  for (const CallbackHandle& c : options_.callbacks) user.push_back(c.get());
  return user;
}

RunParts TrainingRun::parts() {
  return {model_, *optimizer_, scaler_, schedule_, context_, model_.metrics_, state_};
}

// The signal that stops the run, or 0. A distributed run stops when any process received one: they
// agreed on it at the last window's close.
int TrainingRun::stop_signal() const {
  const int mine = stop_signal_ ? stop_signal_->received() : 0;
  if (!reducer_) return mine;
  return reducer_->agreed().stop ? (mine != 0 ? mine : SIGTERM) : 0;
}

// SIGINT or SIGTERM: stop between micro-batches (or at an epoch's end), with a checkpoint when
// there is a folder for it. `next` is the epoch's next slot; the slot count at the epoch's end.
void TrainingRun::stop_if_signalled(int epoch, std::size_t next) {
  const int signal = stop_signal();
  if (signal == 0) return;
  const auto count = static_cast<std::size_t>(epoch_micro_batches_);
  const std::string at = next < count ? fmt::format("after micro-batch {}/{} of epoch {}/{}", next, count, epoch + 1,
                                                    options_.epochs)
                                      : fmt::format("at the end of epoch {}/{}", epoch + 1, options_.epochs);
  if (!checkpointing_.dir.empty() && next < count) {
    state_.next_slot = next;
    write_checkpoint();
  }
  throw_stopped(signal, at);
}

// A signal during the validation at an epoch's end stops at once, not after the whole pass: the
// checkpoint then holds the epoch with all its micro-batches trained and its end (validation,
// callbacks) still to come, which a continued run does first. (A distributed run validates on:
// its processes agree on a stop only at a window's close.)
void TrainingRun::stop_in_validation(int epoch, const Interrupted& stopped) {
  if (!checkpointing_.dir.empty()) {
    state_.next_slot = static_cast<std::size_t>(epoch_micro_batches_);
    write_checkpoint();
  }
  throw_stopped(stopped.signal(), fmt::format("during the validation after epoch {}/{}", epoch + 1, options_.epochs));
}

void TrainingRun::throw_stopped(int signal, const std::string& at) const {
  if (checkpointing_.dir.empty())
    throw Interrupted(fmt::format("training stopped by {} {} ({} optimizer steps); no checkpoint folder is set "
                                  "(checkpoint.dir), so this run cannot be continued",
                                  signal_name(signal), at, context_.optimizer_steps),
                      signal);
  throw Interrupted(fmt::format("training stopped by {} {} ({} optimizer steps); checkpoint {} holds it: run the same "
                                "training again to continue from there",
                                signal_name(signal), at, context_.optimizer_steps, last_checkpoint_path_),
                    signal);
}

}  // namespace accrue::detail
