#include "accrue/dsl/training_run.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <numeric>
#include <sstream>

#include "accrue/dsl/trainer.hpp"
#include "accrue/framework/autocast.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/distributed/sync_batch_norm.hpp"
#include "accrue/framework/files.hpp"
#include "accrue/framework/log.hpp"
#include "accrue/framework/ops.hpp"
#include "accrue/framework/serialization/checkpoint.hpp"
#include "accrue/framework/training/window_close.hpp"

namespace accrue::detail {

namespace {

// Warns once per run for each layer that normalizes with batch statistics over fewer samples than
// a window's: with accumulation the statistics are the micro-batch's, not the effective batch's, and
// in a distributed run this process's share of it unless the layer shares them (.sync = true).
void warn_batch_statistics(const Sequential& model, const StepPlan& plan, std::int64_t micro_batch, int processes) {
  const std::int64_t effective = plan.max_effective_batch();
  for (std::size_t i = 0; i < model.size(); ++i) {
    const Layer& l = model.layer(i);
    if (!l.uses_batch_statistics()) continue;
    const bool shared = processes > 1 && l.shares_batch_statistics();
    const std::int64_t covered = shared ? micro_batch * processes : micro_batch;
    if (covered >= effective) continue;
    const std::string samples =
        shared ? fmt::format("the global micro-batch of {} samples ({} from each of {} processes, .sync = true)", covered,
                             micro_batch, processes)
        : processes > 1 ? fmt::format("this process's {} samples of each micro-batch (not the {} of all {} processes: "
                                      "set .sync = true to share them)",
                                      micro_batch, micro_batch * processes, processes)
                        : fmt::format("each micro-batch of {} samples", micro_batch);
    log::warning("layer '{}' ({}) computes its statistics over {}, not over the effective batch of {}: accumulation "
                 "does not make its statistics those of a large batch. GroupNorm or LayerNorm normalize per sample "
                 "and behave the same under accumulation",
                 l.name(), l.type_name(), samples, effective);
  }
}

// The memory planner: the largest micro-batch per process whose plan fits the budget and that,
// times the processes, divides the effective batch.
std::int64_t planned_micro_batch(const Sequential& model, std::size_t budget, const distributed::Communicator& processes) {
  const std::int64_t effective = model.recipe().accumulation().effective_samples();
  const int n = processes.size();
  for (std::int64_t m = effective / n; m >= 1; --m) {
    if (effective % (m * n) != 0) continue;
    // A distributed run's gradients are its buckets, there for the whole run as when accumulating.
    const MemoryPlan plan = model.memory_plan(m, m * n < effective || n > 1, /*under_limit=*/true);
    if (plan.peak_total > budget) continue;
    if (processes.rank() == 0)
      log::info("memory budget {}: micro-batch {}{} x accumulate {} = effective batch {}, planned peak {}{}\n{}",
                format_bytes(budget), m, n > 1 ? fmt::format(" x {} processes", n) : "", effective / (m * n), effective,
                format_bytes(plan.peak_total), n > 1 ? " per process" : "", plan.str());
    return m;
  }
  throw ValueError(fmt::format("memory_budget({}): even a micro-batch of 1 is planned to need more; raise the budget "
                               "or use a smaller model:\n{}",
                               format_bytes(budget), model.memory_plan(1, effective > 1, true).str()));
}

// The memory a run must fit in (a limit, or what the machine has), as messages name it: "the limit
// of 5.00 MiB", and what to do when even a micro-batch of 1 does not fit.
struct MemoryBudget {
  std::size_t bytes;
  std::string name, remedy;
};

MemoryBudget limit_budget(std::size_t limit) {
  return {limit, fmt::format("the limit of {}", format_bytes(limit)),
          fmt::format("raise the limit of {} or use a smaller model", format_bytes(limit))};
}

// For a run that does not fit in `budget`: the largest micro-batch below the current one that the
// memory plan fits in it beside what else is live, with the accumulation that keeps the effective
// batch.
std::string fitting_advice(const Sequential& model, std::int64_t micro_batch, std::int64_t effective_batch,
                           std::size_t live_besides_model, const MemoryBudget& budget) {
  if (const std::optional<std::int64_t> m = model.fitting_micro_batch(micro_batch, budget.bytes, live_besides_model)) {
    const std::int64_t k = ceil_div(effective_batch, *m);
    return fmt::format("\nMicro-batches of {} with accumulate({}) keep the effective batch of {} and are planned to "
                       "peak at {} (model.memory_plan({}); {} more is live besides the model), within {}.",
                       *m, k, *m * k, format_bytes(model.memory_plan(*m, true, true).peak_total), *m,
                       format_bytes(live_besides_model), budget.name);
  }
  return fmt::format("\nEven a micro-batch of 1 is planned to peak at {} (model.memory_plan(1)) beside {} live: {}.",
                     format_bytes(model.memory_plan(1, true, true).peak_total), format_bytes(live_besides_model),
                     budget.remedy);
}

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
          {"loss", model.loss().name()},
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

// The first line of `a` (lines "option=value") that `b` lacks at its place, or "no more options".
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream x{a}, y{b};
  for (std::string p, q; std::getline(x, p);)
    if (!std::getline(y, q) || p != q) return p;
  return "no more options";
}

// Runs `f`; the error it threw, if any, for agree_on_failure.
template <class F>
std::exception_ptr attempt(F&& f) {
  try {
    f();
  } catch (const Error&) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace

StepPlan plan_run(const Sequential& model, const TrainerOptions& options, std::int64_t train_size,
                  std::int64_t micro_batch, int accumulation_factor) {
  ACCRUE_CHECK(model.compiled(), "the model is not compiled: call model.compile(optimizer, loss, metrics) first");
  const auto [schedule, accumulate] = resolve_accumulation(model, options);
  const int processes = options.distributed ? distributed::world().size() : 1;
  return StepPlan{{.dataset_size = train_size,
                   .micro_batch = micro_batch * processes,
                   .drop_last = options.drop_last,
                   .epochs = options.epochs,
                   .schedule = accumulation_factor > 1 ? schedule.scaled(accumulation_factor) : schedule,
                   .last_window = accumulate.last_window}};
}

// The training loop: what the tutorials write, with each event a member function below.
History TrainingRun::fit() {
  begin();
  for (int epoch = state_.epoch; epoch < options_.epochs && !context_.stop_requested; ++epoch) {
    const TrainingModeGuard mode{model_, true};
    for (std::size_t k = begin_epoch(epoch); k < slots_.size(); ++k) {
      const MicroBatchSlot slot = slots_[k];
      StepRecord record = start_record(slot);
      // Forward, weighted loss, backward; after an out-of-memory back-off, the window again
      // from its start.
      if (const std::optional<std::size_t> restart = train_micro_batch(k, record)) {
        k = *restart - 1;  // unsigned wrap-around at 0 is defined: ++k lands on the restart
        continue;
      }
      if (slot.closes_window) apply_held_back_updates();
      const Logs running = metric_logs(state_.epoch_loss, model_.metrics_);
      ++state_.micro_batches;
      if (slot.closes_window) close_window(slot, record);
      for (Callback* c : callbacks_) c->on_micro_batch_end(record, running);
      if (slot.closes_window) {
        for (Callback* c : callbacks_) c->on_optimizer_step(record);
        if (context_.stop_requested) break;
      }
      between_micro_batches(k);
    }
    end_epoch(epoch);
  }
  return finish();
}

TrainingRun::TrainingRun(Sequential& model, const Dataset& train, std::optional<Dataset> validation,
                         const TrainerOptions& options, const std::string& resume_from)
    : model_(model),
      train_(train),
      validation_(std::move(validation)),
      options_(options),
      checkpointing_(options.checkpoint),
      resume_from_(resume_from),
      schedule_(options.schedule) {
  model.check_compiled("fit()");
  ACCRUE_CHECK(!train.empty(), "fit: the training set '{}' is empty", train.name());
  if (options.distributed) {
    communicator_ = &distributed::world();
    // Backing off changes one process's micro-batch when that process runs out of memory.
    ACCRUE_CHECK(!options.backoff_on_oom,
                 "fit: backoff_on_oom does not combine with distributed training yet (every process would have to back "
                 "off together); set the micro-batch with memory_budget or batch_size instead");
  } else {
    own_communicator_ = distributed::single_process();
    communicator_ = own_communicator_.get();
  }
  if (communicator_->size() == 1) {
    prepare_model();
    prepare_run();
    return;
  }
  // Every rank prepares; a rank that cannot must not leave the others waiting for it.
  agree_on_failure(attempt([this] { prepare_model(); }));
  share_checkpoint();
  agree_on_failure(attempt([this] { prepare_run(); }));
  agree_to_start();
}

// The model, the micro-batch, the optimizer and accumulation, the checkpoint folder and the
// checkpoint to continue from (process 0's choice in a distributed run).
void TrainingRun::prepare_model() {
  Sequential& model = model_;
  const Dataset& train = train_;
  const TrainerOptions& options = options_;
  const bool first = communicator_->rank() == 0;
  model.build(train.sample_shape());
  state_.batch_size = options.batch_size;
  if (const auto budget = model.recipe().memory_budget())
    state_.batch_size = planned_micro_batch(model, *budget, *communicator_);
  if (validation_)
    ACCRUE_CHECK_SHAPE(validation_->sample_shape() == train.sample_shape(),
                       "fit: validation samples '{}' have shape {}, training samples {}", validation_->name(),
                       validation_->sample_shape(), train.sample_shape());
  model.ensure_optimizer();
  optimizer_ = model.optimizer_.get();
  std::tie(accumulation_, accumulate_) = resolve_accumulation(model, options);
  accumulation_.validate_for(state_.batch_size, communicator_->size());
  // The folder is this run's from here on: a second run there is refused before it reads anything.
  // In a distributed run process 0 writes the checkpoints.
  if (!checkpointing_.dir.empty() && first) folder_lock_.emplace(prepare_checkpoint_dir(checkpointing_.dir));
  // Only runs that write or read checkpoints, or compare their processes, pay for reading the
  // data's fingerprint.
  if (!checkpointing_.dir.empty() || !resume_from_.empty() || communicator_->size() > 1)
    signature_ = run_signature(model, train, options, accumulation_, accumulate_, schedule_);
  if (first) checkpoint_ = find_checkpoint(resume_from_, checkpointing_);
}

// The plan, the loader, the callbacks and the context, and the checkpoint's state put back.
void TrainingRun::prepare_run() {
  if (checkpoint_) {
    checkpoint_->check_signature(signature_);
    // A run that backed off on out-of-memory goes on with the micro-batch it had reached.
    state_.batch_size = resumed_micro_batch(*checkpoint_, *communicator_);
    state_.accumulation_factor = checkpoint_->accumulation_factor();
  }
  plan_ = plan_run(model_, options_, train_.size(), state_.batch_size, state_.accumulation_factor);
  check_machine_memory();
  schedule_.prepare(*plan_);
  sample_units_ = model_.loss().counts(train_.targets());
  counts_tokens_ = train_.targets().rank() >= 2;
  if (std::all_of(sample_units_.begin(), sample_units_.end(), [&](std::int64_t u) { return u == sample_units_[0]; }))
    units_per_sample_ = sample_units_[0];
  if (communicator_->rank() == 0) warn_batch_statistics(model_, *plan_, state_.batch_size, communicator_->size());
  state_.loader_seed = checkpoint_      ? checkpoint_->loader_seed()
                       : options_.seed ? *options_.seed
                                       : (static_cast<std::uint64_t>(model_.generator().next_u32()) << 32);
  make_loader();
  make_callbacks();
  make_context();
  optimizer_->zero_grad();
  if (checkpoint_) resume();
}

// A run whose plan this machine cannot hold is refused with the plan before its first window: the
// kernel would hand the memory out (it overcommits) and end the process once it is filled. Under
// a limit, or backing off on out-of-memory, the allocator's refusal at the limit says it instead.
void TrainingRun::check_machine_memory() const {
  const MemoryStats now = memory_stats(model_.device());
  if (!model_.device().is_cpu() || now.limit != 0 || options_.backoff_on_oom) return;
  const std::optional<std::size_t> available = available_system_memory();
  if (!available) return;
  // What the model holds already is part of the plan; datasets in memory are not.
  const std::size_t held = now.live_of(MemoryCategory::parameters) + now.live_of(MemoryCategory::gradients) +
                           now.live_of(MemoryCategory::optimizer_state);
  const MemoryPlan plan = model_.memory_plan(state_.batch_size);
  if (plan.peak_total <= held + *available) return;
  const std::int64_t effective = state_.batch_size * accumulation_.steps_at(state_.epoch, 0, state_.batch_size);
  const MemoryBudget machine{held + *available,
                             fmt::format("the {} this machine has for the model", format_bytes(held + *available)),
                             "use a smaller model"};
  throw OutOfMemory(fmt::format("model.memory_plan({}) peaks at {}, but this machine has {} available besides the {} the "
                                "model holds: the system would end the process once training filled it.{}\n{}",
                                state_.batch_size, format_bytes(plan.peak_total), format_bytes(*available),
                                format_bytes(held), fitting_advice(model_, state_.batch_size, effective, 0, machine),
                                plan.str()));
}

// A distributed run continues from the checkpoint process 0 chose, which every process reads: the
// checkpoint folder must be one they all reach (on several machines, a shared file system).
void TrainingRun::share_checkpoint() {
  const std::string path = communicator_->broadcast(checkpoint_ ? checkpoint_->path() : std::string{}, 0);
  std::exception_ptr failed;
  if (communicator_->rank() != 0 && !path.empty()) failed = attempt([&] { checkpoint_ = TrainingCheckpoint::read(path); });
  agree_on_failure(failed);
}

// When a process failed to prepare, every process throws: the failed ones their own error, the
// others one naming the first failed rank and its message.
void TrainingRun::agree_on_failure(std::exception_ptr failed) {
  distributed::Communicator& c = *communicator_;
  const std::vector<std::int64_t> failures = c.allgather(failed ? 1 : 0);
  for (std::size_t r = 0; r < failures.size(); ++r) {
    if (failures[r] == 0) continue;
    std::string message;
    if (failed) try {
        std::rethrow_exception(failed);
      } catch (const Error& e) {
        message = e.what();
      }
    message = c.broadcast(message, static_cast<int>(r));
    if (failed) try {
        std::rethrow_exception(failed);
      } catch (Error& e) {
        e.prepend(fmt::format("rank {}: ", c.rank()));
        throw;
      }
    throw CommunicationError(fmt::format("rank {} could not start training: {}", r, message));
  }
}

// A distributed run starts only when every rank prepared the same run: otherwise every rank throws
// the same error, naming the rank and what differs. Then the ranks take rank 0's parameters and
// buffers (a broadcast: the replicas start equal whatever each initialised) and shuffling seed.
void TrainingRun::agree_to_start() {
  distributed::Communicator& c = *communicator_;
  RunSignature mine = signature_;
  // Each layer's type and options (heads, dropout, ...): what shapes and names cannot tell apart.
  const std::size_t configs_begin = mine.size();
  for (std::size_t i = 0; i < model_.size(); ++i) {
    std::string lines;
    for (const std::string& line : model_.layer(i).config_lines()) lines += line + "\n";
    mine.emplace_back(fmt::format("layer {} '{}' ({})", i, model_.layer(i).name(), model_.layer(i).type_name()), lines);
  }
  const std::size_t configs_end = mine.size();
  std::string layout;
  for (const auto& [name, t] : model_.named_state()) layout += fmt::format("{} {} {}; ", name, t.shape(), dtype_name(t.dtype()));
  mine.emplace_back("model", layout);
  mine.emplace_back("device", model_.device().is_cpu() ? "cpu" : "a GPU");
  mine.emplace_back("processes", std::to_string(c.size()));
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const auto& [what, value] = mine[k];
    const std::vector<std::int64_t> hashes = c.allgather(static_cast<std::int64_t>(std::hash<std::string>{}(value)));
    for (std::size_t r = 1; r < hashes.size(); ++r) {
      if (hashes[r] == hashes[0]) continue;
      const std::string first = c.broadcast(value, 0), other = c.broadcast(value, static_cast<int>(r));
      if (k >= configs_begin && k < configs_end)
        throw ValueError(fmt::format("the processes of a distributed run must train the same model, but {} has {} on "
                                     "rank 0 and {} on rank {}",
                                     what, first_difference(first, other), first_difference(other, first), r));
      throw ValueError(fmt::format("the processes of a distributed run must train the same run, but the {} is '{}' "
                                   "on rank 0 and '{}' on rank {}",
                                   what, first, other, r));
    }
  }
  const NoGradGuard no_grad;
  for (const auto& [name, t] : model_.named_state()) distributed::for_device(t.device()).broadcast(t, 0);
  state_.loader_seed = static_cast<std::uint64_t>(c.allgather(static_cast<std::int64_t>(state_.loader_seed))[0]);
  make_loader();
}

// The loader of the run's micro-batch and shuffling seed, and the batches it hands to the device.
void TrainingRun::make_loader() {
  batches_.reset();  // before the loader it reads from
  loader_ = std::make_unique<DataLoader>(train_, LoaderOptions{.batch_size = state_.batch_size,
                                                               .shuffle = options_.shuffle,
                                                               .seed = state_.loader_seed,
                                                               .drop_last = options_.drop_last,
                                                               .shard = communicator_->rank(),
                                                               .shards = communicator_->size()});
  batches_ = std::make_unique<DeviceBatches>(*loader_, model_.device());
}

void TrainingRun::make_callbacks() {
  // One process speaks for a distributed run.
  const bool speaks = communicator_->rank() == 0;
  if (options_.verbose > 0 && speaks) {
    progress_.emplace(callbacks::ProgressBarOptions{
        .mode = options_.verbose == 2 ? callbacks::ProgressBarOptions::Mode::lines
                                      : callbacks::ProgressBarOptions::Mode::automatic});
    callbacks_.push_back(&*progress_);
  }
  if (options_.explain > 0 && speaks) {
    explain_.emplace(callbacks::ExplainOptions{.windows = options_.explain});
    callbacks_.push_back(&*explain_);
  }
  for (const CallbackHandle& c : options_.callbacks) callbacks_.push_back(c.get());
  track_grad_norm_ = options_.track_grad_norm ||
                     std::any_of(callbacks_.begin(), callbacks_.end(), [](const Callback* c) { return c->needs_grad_norm(); });
}

void TrainingRun::make_context() {
  context_.model = &model_;
  context_.optimizer = optimizer_;
  context_.recipe = &model_.recipe();
  context_.plan = &*plan_;
  context_.schedule = &schedule_;
  context_.epochs = options_.epochs;
  context_.batch_size = state_.batch_size;
  context_.processes = communicator_->size();
  context_.rank = communicator_->rank();
  context_.samples_per_epoch = plan_->samples_per_epoch();
  context_.steps_per_epoch = plan_->micro_batches_per_epoch();
  if (counts_tokens_) context_.tokens_per_epoch = std::accumulate(sample_units_.begin(), sample_units_.end(), std::int64_t{0});
  context_.base_lr = optimizer_->lr();
  parameters_ = model_.parameters();
  if (communicator_->size() > 1) {
    distributed::Communicator& on_device = distributed::for_device(model_.device());
    reducer_ = std::make_unique<distributed::Reducer>(on_device, parameters_,
                                                      distributed::ReducerOptions{.bucket_bytes = options_.bucket_bytes});
    for (std::size_t i = 0; i < model_.size(); ++i)
      if (model_.layer(i).shares_batch_statistics()) statistics_group_ = &on_device;
  }
  context_.reduction = reducer_ ? &reducer_->stats() : nullptr;
  amp_ = model_.recipe().amp_dtype(model_.device());
  scaler_ = model_.scaler();
  context_.amp_dtype = amp_;
  context_.scaler = scaler_;
}

RunParts TrainingRun::parts() {
  return {model_, *optimizer_, scaler_, schedule_, context_, model_.metrics_, state_};
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

void TrainingRun::begin() {
  for (Callback* c : callbacks_) c->on_train_begin(context_);
  if (checkpoint_) checkpoint_->restore_callbacks(saved_callbacks());
  last_checkpoint_ = std::chrono::steady_clock::now();
  if (options_.stop_on_signal) stop_signal_.emplace();
  const MemoryStats at_start = memory_stats(model_.device());
  live_besides_model_ = at_start.live_total - at_start.live_of(MemoryCategory::parameters) -
                        at_start.live_of(MemoryCategory::optimizer_state) -
                        at_start.live_of(MemoryCategory::gradients);
  if (amp_ && accumulation_.is_set()) packed_parameters_.emplace();
  // In a distributed run the window's last backward multiplies what waits into the buckets before
  // it reports a gradient complete; a process whose last micro-batch is empty flushes at the close.
  if (model_.defers_weight_gradients(accumulation_.is_set(), accumulate_)) deferred_gradients_.emplace();
}

std::size_t TrainingRun::begin_epoch(int epoch) {
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
  return continuing ? state_.next_slot : 0;
}

std::int64_t TrainingRun::units_of(const DataLoader& loader, std::int64_t index, bool all_shards) const {
  std::int64_t n = 0;
  for (const std::int64_t i : loader.sample_indices(index, all_shards)) n += sample_units_[static_cast<std::size_t>(i)];
  return n;
}

std::int64_t TrainingRun::micro_batch_units(const MicroBatchSlot& slot, std::int64_t samples) const {
  return units_per_sample_ ? samples * *units_per_sample_ : units_of(*loader_, slot.index, false);
}

std::int64_t TrainingRun::window_units(const MicroBatchSlot& slot) const {
  if (units_per_sample_) return slot.window_samples * *units_per_sample_;
  // Micro-batch m of the window is position start + m of a run of epochs of `per_epoch` each; a
  // carried window's part in a neighbouring epoch reads that epoch's order.
  const std::int64_t per_epoch = loader_->size(), start = slot.index - slot.position;
  std::int64_t n = 0;
  std::optional<DataLoader> other;
  for (int m = 0; m < slot.window_micro_batches; ++m) {
    const std::int64_t at = start + m;
    const std::int64_t epochs_away = at >= 0 ? at / per_epoch : -((-at + per_epoch - 1) / per_epoch);
    if (epochs_away == 0) {
      n += units_of(*loader_, at, true);
      continue;
    }
    if (!other || other->epoch() != loader_->epoch() + epochs_away) {
      other.emplace(*loader_);
      other->set_epoch(loader_->epoch() + epochs_away);
    }
    n += units_of(*other, at - epochs_away * per_epoch, true);
  }
  return n;
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

// Forward, the weighted loss and backward of micro-batch `k`; the index to go on from when an
// out-of-memory back-off restarts the window.
std::optional<std::size_t> TrainingRun::train_micro_batch(std::size_t k, StepRecord& record) {
  // The rest of a window a NanGuard or the loss scaler dropped is not trained, except where layers
  // share batch statistics over the processes: then every process runs every micro-batch, also an
  // empty share or a dropped window's, so that all make the same collective calls.
  if (state_.window_poisoned && !statistics_group_) return std::nullopt;
  const MicroBatchSlot slot = slots_[k];
  const Batch batch = batches_->get(slot.index, k + 1 < slots_.size() ? std::optional{slots_[k + 1].index} : std::nullopt);
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
  if (batch.size() == 0 && !statistics_group_) return std::nullopt;  // this process's share of a short last micro-batch
  try {
    const distributed::ShareBatchStatistics sharing{statistics_group_};
    Tensor prediction, loss_sum;
    {
      const AutocastGuard autocast{amp_};
      prediction = model_.forward(batch.inputs);
      loss_sum = model_.loss().batch_sum(prediction, batch.targets);
    }
    const double loss_value = loss_sum.item();
    if (units > 0) record.loss = loss_value / static_cast<double>(units);
    if (!std::isfinite(loss_value) && !state_.window_poisoned) handle_nonfinite_loss(loss_value, record);
    if (state_.window_poisoned && !statistics_group_) return std::nullopt;
    // The weight that makes the window's accumulated gradient that of its mean loss over all
    // processes' samples, or counted tokens (or, per_micro_batch, the tutorials' mean / N, averaged
    // over processes as PyTorch's DDP averages).
    const bool mean = model_.loss().reduction() == Reduction::mean;
    double weight = units == 0 ? 0.0 : 1.0;
    if (accumulate_.normalization == Normalization::per_micro_batch && units > 0)
      weight = (mean ? 1.0 / static_cast<double>(units) : 1.0) / slot.window_micro_batches / communicator_->size();
    else if (mean && units > 0)
      weight = 1.0 / static_cast<double>(window_units_);
    record.loss_weight = weight;
    // With loss scaling the summed loss is also multiplied by the scale, undone once per step.
    const double scale = scaler_ ? scaler_->scale() : 1.0;
    {
      // A distributed run's window-closing backward pass starts reducing gradients as they complete.
      std::optional<ObserveLeafGradients> reducing;
      if (reducer_ && slot.closes_window) reducing.emplace(*reducer_);
      if (deferred_gradients_) deferred_gradients_->set_closing(slot.closes_window);
      (loss_sum * static_cast<float>(weight * scale)).backward();
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

// With back-off, a window's metric updates wait for its end, so that a redone window counts once.
void TrainingRun::update_metrics(const Tensor& prediction, const Tensor& targets, double loss, std::int64_t units) {
  if (options_.backoff_on_oom) {
    state_.pending.push_back({prediction.detach(), targets, loss, units});
    return;
  }
  const NoGradGuard no_grad;
  state_.epoch_loss.add(loss, units);
  for (Metric& m : model_.metrics_) m.update(prediction, targets, loss);
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

// Out of memory in micro-batch `k`: the window's partial gradients go (parameters and optimizer
// state are as before it). With backoff_on_oom the window starts again from its first sample with
// micro-batches half as large and twice as many per window; returns the slot it starts at.
// Otherwise rethrows with where it happened and the micro-batch the memory plan says would fit.
std::size_t TrainingRun::back_off(OutOfMemory& e, std::size_t k, const StepRecord& record) {
  optimizer_->zero_grad();
  if (deferred_gradients_) deferred_gradients_->discard();
  state_.pending.clear();
  const MicroBatchSlot slot = slots_[k];
  const std::int64_t micro = state_.batch_size;
  if (!options_.backoff_on_oom || micro < 2 || micro % 2 != 0) {
    e.prepend(where(slot, record.micro_batch_samples));
    if (options_.backoff_on_oom) e.append(fmt::format("\nbackoff_on_oom cannot halve a micro-batch of {}.", micro));
    if (const std::size_t limit = memory_stats(model_.device()).limit; limit > 0)
      e.append(fitting_advice(model_, std::min(micro, train_.size()), plan_->max_effective_batch(), live_besides_model_,
                              limit_budget(limit)));
    throw;
  }
  const std::int64_t window_start = slots_[k - static_cast<std::size_t>(slot.position)].index * micro;
  state_.batch_size = micro / 2;
  state_.accumulation_factor *= 2;
  replan();
  std::size_t restart = 0;
  while (restart < slots_.size() && slots_[restart].index * state_.batch_size < window_start) ++restart;
  log::warning("out of memory at a micro-batch of {} (epoch {}, optimizer step {}): backing off to micro-batches of {} "
               "accumulated {} per step (effective batch {}); redoing the window",
               micro, state_.epoch + 1, context_.optimizer_steps + 1, state_.batch_size,
               slots_[restart].window_micro_batches, slots_[restart].window_samples);
  return restart;
}

// The plan, the loader and the current epoch's slots for the run's micro-batch and accumulation.
void TrainingRun::replan() {
  plan_ = plan_run(model_, options_, train_.size(), state_.batch_size, state_.accumulation_factor);
  make_loader();
  loader_->set_epoch(state_.epoch);
  slots_ = plan_->epoch_slots(state_.epoch);
  context_.batch_size = state_.batch_size;
  context_.samples_per_epoch = plan_->samples_per_epoch();
  context_.steps_per_epoch = plan_->micro_batches_per_epoch();
}

// The order of a window's close is written once, in framework/training/window_close.hpp.
void TrainingRun::close_window(const MicroBatchSlot& slot, StepRecord& record) {
  // Rows still waiting (a last micro-batch that had no samples here) join before anything reads
  // the gradients.
  if (deferred_gradients_) state_.window_poisoned ? deferred_gradients_->discard() : deferred_gradients_->flush();
  if (reducer_)
    reducer_->request({.stop = stop_signal_ && stop_signal_->received() != 0, .checkpoint = checkpoint_due_by_clock()});
  try {
    accrue::close_window({.parameters = parameters_,
                          .optimizer = *optimizer_,
                          .recipe = model_.recipe(),
                          .scaler = scaler_,
                          .schedule = schedule_,
                          .base_lr = context_.base_lr,
                          .lr_factor = context_.lr_factor,
                          .track_norm = track_grad_norm_,
                          .reducer = reducer_.get()},
                         state_.window_poisoned, context_.optimizer_steps, record);
  } catch (Error& e) {
    e.prepend(where(slot, record.micro_batch_samples));
    throw;
  }
  state_.window_poisoned = false;
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

bool TrainingRun::checkpoint_due_by_clock() const {
  return !checkpointing_.dir.empty() && checkpointing_.every_seconds > 0 &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - last_checkpoint_).count() >=
             checkpointing_.every_seconds;
}

void TrainingRun::end_epoch(int epoch) {
  Logs logs = metric_logs(state_.epoch_loss, model_.metrics_);
  aggregate_metrics(logs);
  share_buffers();
  check_replicas(epoch);
  context_.epoch_memory = memory_stats(model_.device());
  if (validation_) try {
      const Evaluation val =
          model_.evaluate(*validation_, {.batch_size = state_.batch_size, .distributed = options_.distributed});
      for (const auto& [name, value] : val.logs.items()) logs.set("val_" + name, value);
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

// A distributed run's epoch logs count every process's samples.
void TrainingRun::aggregate_metrics(Logs& logs) {
  if (communicator_->size() == 1) return;
  metrics::MeanLoss loss = state_.epoch_loss;
  std::vector<Metric> metrics = model_.metrics_;
  sum_over_processes(*communicator_, loss, metrics);
  const Logs all = metric_logs(loss, metrics);
  for (const auto& [name, value] : all.items()) logs.set(name, value);
}

// Buffers that each process updates from its own share of the samples (the running statistics of a
// BatchNorm without .sync) end each epoch as rank 0's on every process, as PyTorch's DDP
// broadcasts them, so that every process validates and checkpoints one model.
void TrainingRun::share_buffers() {
  if (communicator_->size() == 1) return;
  const NoGradGuard no_grad;
  for (const auto& [name, t] : model_.named_buffers()) distributed::for_device(t.device()).broadcast(t, 0);
}

// The replicas' parameters and buffers must be the same bits on every rank after each epoch; a
// difference means the ranks no longer train one model, and is reported rather than trained on.
void TrainingRun::check_replicas(int epoch) {
  if (communicator_->size() == 1) return;
  const std::uint32_t checksum = serialization::checkpoint_checksum(model_.named_state(), {});
  const std::vector<std::int64_t> all = communicator_->allgather(checksum);
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw CommunicationError(fmt::format("after epoch {} the parameters on rank {} differ from rank 0's: the "
                                           "processes no longer train one model",
                                           epoch + 1, r));
}

History TrainingRun::finish() {
  packed_parameters_.reset();
  deferred_gradients_.reset();
  // Gradients of a window cut off by an early stop are not applied.
  optimizer_->zero_grad();
  optimizer_->set_lr(context_.base_lr);
  const History& history = state_.history;
  for (Callback* c : callbacks_) c->on_train_end(history.epochs() ? history.logs().back() : Logs{});
  return history;
}

// Checkpoints: at each epoch's end, and every so many micro-batches or seconds in between. Process
// 0 writes a distributed run's, with every process's own generators and running metrics.
void TrainingRun::write_checkpoint() {
  if (deferred_gradients_) deferred_gradients_->flush();  // an open window's gradients are saved whole
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

// The callbacks whose state a checkpoint keeps: the user's (the progress bar and explanations keep
// none, and only process 0 of a distributed run has them).
std::vector<Callback*> TrainingRun::saved_callbacks() const {
  std::vector<Callback*> user;
  for (const CallbackHandle& c : options_.callbacks) user.push_back(c.get());
  return user;
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
  const std::string at = next < slots_.size() ? fmt::format("after micro-batch {}/{} of epoch {}/{}", next,
                                                             slots_.size(), epoch + 1, options_.epochs)
                                              : fmt::format("at the end of epoch {}/{}", epoch + 1, options_.epochs);
  if (!checkpointing_.dir.empty() && next < slots_.size()) {
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
    state_.next_slot = slots_.size();
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

// "epoch 2/5, batch 7/938 (samples ...; micro-batch 3/4 of optimizer step 12): ", put before an
// error raised while training a micro-batch.
std::string TrainingRun::where(const MicroBatchSlot& slot, std::int64_t samples) const {
  const std::int64_t first = slot.index * state_.batch_size;
  return fmt::format("epoch {}/{}, batch {}/{} (samples {}..{} of the epoch; micro-batch {}/{} of optimizer step {}): ",
                     state_.epoch + 1, options_.epochs, slot.index + 1, plan_->micro_batches_per_epoch(), first,
                     first + samples - 1, slot.position + 1, slot.window_micro_batches, slot.window + 1);
}

}  // namespace accrue::detail
