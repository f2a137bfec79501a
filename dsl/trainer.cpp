// The training loop shared by Trainer::fit and Sequential::fit.

#include "accrue/dsl/trainer.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "accrue/datasets/device_batches.hpp"
#include "accrue/datasets/loader.hpp"
#include "accrue/dsl/callbacks/explain.hpp"
#include "accrue/dsl/callbacks/progress_bar.hpp"
#include "accrue/dsl/training_checkpoint.hpp"
#include "accrue/framework/autocast.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/files.hpp"
#include "accrue/framework/log.hpp"
#include "accrue/framework/ops.hpp"
#include "accrue/framework/training/stop_signal.hpp"
#include "accrue/framework/training/window_close.hpp"

namespace accrue {

std::pair<AccumulationSchedule, AccumulateOptions> resolve_accumulation(const Sequential& model,
                                                                        const TrainerOptions& options) {
  const optim::Recipe& recipe = model.recipe();
  if (options.accumulate.is_set() && recipe.accumulates())
    throw ValueError(fmt::format("accumulation is set twice: in compile() ({}) and in the fit/Trainer options ({}); "
                                 "set it in one place",
                                 recipe.accumulation().str(), options.accumulate.str()));
  if (options.accumulate.is_set()) return {options.accumulate, options.accumulate_options};
  return {recipe.accumulation(), recipe.accumulate_options()};
}

Trainer::Trainer(TrainerOptions options) : options_(std::move(options)) {
  ACCRUE_CHECK(options_.epochs >= 1, "epochs must be at least 1, got {}", options_.epochs);
  ACCRUE_CHECK(options_.batch_size >= 1, "batch_size must be at least 1, got {}", options_.batch_size);
  ACCRUE_CHECK(options_.verbose >= 0 && options_.verbose <= 2, "verbose must be 0, 1 or 2, got {}", options_.verbose);
  ACCRUE_CHECK(options_.explain >= 0, "explain must be >= 0 (windows to explain), got {}", options_.explain);
  if (options_.accumulate.is_set()) options_.accumulate.validate_for(options_.batch_size);
  const CheckpointOptions& c = options_.checkpoint;
  ACCRUE_CHECK(c.every_micro_batches >= 0, "checkpoint.every_micro_batches must be >= 0, got {}", c.every_micro_batches);
  ACCRUE_CHECK(std::isfinite(c.every_seconds) && c.every_seconds >= 0, "checkpoint.every_seconds must be >= 0, got {}",
               c.every_seconds);
  ACCRUE_CHECK(c.keep >= 1, "checkpoint.keep must be at least 1, got {}", c.keep);
  ACCRUE_CHECK(!c.dir.empty() || (c.every_micro_batches == 0 && c.every_seconds == 0),
               "checkpoint: every_micro_batches or every_seconds is set but dir is empty; name a folder");
}

StepPlan Trainer::plan(const Sequential& model, std::int64_t train_size) const {
  ACCRUE_CHECK(model.compiled(), "the model is not compiled: call model.compile(optimizer, loss, metrics) first");
  const auto [schedule, accumulate] = resolve_accumulation(model, options_);
  return StepPlan{{.dataset_size = train_size,
                   .micro_batch = options_.batch_size,
                   .drop_last = options_.drop_last,
                   .epochs = options_.epochs,
                   .schedule = accumulation_factor_ > 1 ? schedule.scaled(accumulation_factor_) : schedule,
                   .last_window = accumulate.last_window}};
}

namespace {

std::string micro_batch_context(int epoch, int epochs, const MicroBatchSlot& slot, std::int64_t batches,
                                std::int64_t first, std::int64_t size) {
  return fmt::format("epoch {}/{}, batch {}/{} (samples {}..{} of the epoch; micro-batch {}/{} of optimizer step {}): ",
                     epoch + 1, epochs, slot.index + 1, batches, first, first + size - 1, slot.position + 1,
                     slot.window_micro_batches, slot.window + 1);
}

// Warns once per run for each layer that normalises with batch statistics when windows hold more
// than one micro-batch: the statistics are the micro-batch's, not the effective batch's.
void warn_batch_statistics(const Sequential& model, const StepPlan& plan) {
  const std::int64_t effective = plan.max_effective_batch();
  if (effective <= plan.spec().micro_batch) return;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const Layer& l = model.layer(i);
    if (l.uses_batch_statistics())
      log::warning("layer '{}' ({}) computes its statistics over each micro-batch of {} samples, not over the effective "
                   "batch of {}: accumulation does not make its statistics those of a large batch. GroupNorm or "
                   "LayerNorm normalise per sample and behave the same under accumulation",
                   l.name(), l.type_name(), plan.spec().micro_batch, effective);
  }
}

// The memory planner: the largest divisor of the effective batch whose plan fits the budget.
std::int64_t planned_micro_batch(const Sequential& model, std::size_t budget) {
  const std::int64_t effective = model.recipe().accumulation().effective_samples();
  for (std::int64_t m = effective; m >= 1; --m) {
    if (effective % m != 0) continue;
    const MemoryPlan plan = model.memory_plan(m, m < effective);
    if (plan.peak_total > budget) continue;
    log::info("memory budget {}: micro-batch {} x accumulate {} = effective batch {}, planned peak {}\n{}",
              format_bytes(budget), m, effective / m, effective, format_bytes(plan.peak_total), plan.str());
    return m;
  }
  throw ValueError(fmt::format("memory_budget({}): even a micro-batch of 1 is planned to need more; raise the budget "
                               "or use a smaller model:\n{}",
                               format_bytes(budget), model.memory_plan(1, effective > 1).str()));
}

// For an out-of-memory error under a limit: the largest micro-batch below the current one that the
// memory plan fits in the limit beside what else is live, with the accumulation that keeps the
// effective batch.
std::string fitting_advice(const Sequential& model, std::int64_t micro_batch, std::int64_t effective_batch,
                           std::size_t live_besides_model) {
  const MemoryStats stats = memory_stats(model.device());
  if (stats.limit == 0) return {};
  for (std::int64_t m = micro_batch / 2; m >= 1; m /= 2) {
    const MemoryPlan plan = model.memory_plan(m, /*accumulating=*/true);
    if (plan.peak_total + live_besides_model <= stats.limit) {
      const std::int64_t k = ceil_div(effective_batch, m);
      return fmt::format("\nMicro-batches of {} with accumulate({}) keep the effective batch of {} and are planned to "
                         "peak at {} (model.memory_plan({}); {} more is live besides the model), within the limit of {}.",
                         m, k, m * k, format_bytes(plan.peak_total), m, format_bytes(live_besides_model),
                         format_bytes(stats.limit));
    }
  }
  return fmt::format("\nEven a micro-batch of 1 is planned to peak at {} (model.memory_plan(1)) beside {} live: raise "
                     "the limit of {} or use a smaller model.",
                     format_bytes(model.memory_plan(1, true).peak_total), format_bytes(live_besides_model),
                     format_bytes(stats.limit));
}


// What must be the same for a run to continue from a checkpoint and repeat the run that wrote it.
detail::RunSignature run_signature(const Sequential& model, const Dataset& train, const TrainerOptions& options,
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
std::optional<detail::TrainingCheckpoint> find_checkpoint(const std::string& resume_from,
                                                          const CheckpointOptions& options) {
  std::string dir = options.resume ? options.dir : std::string{};
  if (!resume_from.empty()) {
    if (!is_folder(resume_from, "resume_from")) return detail::TrainingCheckpoint::read(resume_from);
    dir = resume_from;
  }
  if (dir.empty()) return std::nullopt;
  const std::vector<std::string> found = detail::checkpoints_in(dir);
  if (found.empty()) {
    if (!resume_from.empty())
      throw IoError(fmt::format("resume_from: {} holds no training checkpoint (checkpoint-<n>.safetensors)", dir));
    return std::nullopt;
  }
  std::string problems;
  for (const std::string& path : found) {
    try {
      return detail::TrainingCheckpoint::read(path);
    } catch (const IoError& e) {
      log::warning("{}; trying the one before it", e.what());
      problems += fmt::format("\n  {}", e.what());
    }
  }
  throw IoError(fmt::format("no training checkpoint in {} can be used, so the run cannot continue; move them away to "
                            "start afresh:{}",
                            dir, problems));
}

}  // namespace

History Trainer::fit(Sequential& model, const Dataset& train, std::optional<Dataset> validation) {
  return fit(model, train, Run{.validation = std::move(validation)});
}

History Trainer::fit(Sequential& model, const Dataset& train, Run run_options) {
  model.check_compiled("fit()");
  ACCRUE_CHECK(!train.empty(), "fit: the training set '{}' is empty", train.name());
  std::optional<Dataset> validation = run_options.validation ? run_options.validation : options_.validation;
  model.build(train.sample_shape());
  if (const auto budget = model.recipe_.memory_budget()) options_.batch_size = planned_micro_batch(model, *budget);
  if (validation)
    ACCRUE_CHECK_SHAPE(validation->sample_shape() == train.sample_shape(),
                       "fit: validation samples '{}' have shape {}, training samples {}", validation->name(),
                       validation->sample_shape(), train.sample_shape());
  model.ensure_optimizer();
  optim::Optimizer& opt = *model.optimizer_;
  const optim::Recipe& recipe = model.recipe_;
  const auto [accumulation, accumulate] = resolve_accumulation(model, options_);
  accumulation.validate_for(options_.batch_size);
  LrSchedule schedule = options_.schedule;
  const std::string resume_from = run_options.resume_from.empty() ? options_.resume_from : run_options.resume_from;
  const CheckpointOptions& checkpointing = options_.checkpoint;
  // The folder is this run's from here on: a second run there is refused before it reads anything.
  std::optional<detail::CheckpointFolderLock> folder_lock;
  if (!checkpointing.dir.empty()) folder_lock.emplace(detail::prepare_checkpoint_dir(checkpointing.dir));
  // Only runs that write or read checkpoints pay for reading the data's fingerprint.
  const detail::RunSignature signature = !checkpointing.dir.empty() || !resume_from.empty()
                                             ? run_signature(model, train, options_, accumulation, accumulate, schedule)
                                             : detail::RunSignature{};
  const std::optional<detail::TrainingCheckpoint> resume = find_checkpoint(resume_from, checkpointing);
  if (resume) {
    resume->check_signature(signature);
    // A run that backed off on out-of-memory goes on with the micro-batch it had reached.
    options_.batch_size = resume->batch_size();
    accumulation_factor_ = resume->accumulation_factor();
  }
  StepPlan plan = this->plan(model, train.size());
  schedule.prepare(plan);
  warn_batch_statistics(model, plan);

  detail::RunState run;
  run.loader_seed = resume ? resume->loader_seed()
                    : options_.seed ? *options_.seed
                                    : (static_cast<std::uint64_t>(model.generator().next_u32()) << 32);
  const auto make_loader = [&] {
    return std::make_unique<DataLoader>(train, LoaderOptions{.batch_size = options_.batch_size,
                                                             .shuffle = options_.shuffle,
                                                             .seed = run.loader_seed,
                                                             .drop_last = options_.drop_last});
  };
  std::unique_ptr<DataLoader> loader = make_loader();

  std::vector<Callback*> callbacks;
  std::optional<callbacks::ProgressBar> progress;
  if (options_.verbose > 0) {
    progress.emplace(callbacks::ProgressBarOptions{
        .mode = options_.verbose == 2 ? callbacks::ProgressBarOptions::Mode::lines
                                      : callbacks::ProgressBarOptions::Mode::automatic});
    callbacks.push_back(&*progress);
  }
  std::optional<callbacks::Explain> explain;
  if (options_.explain > 0) {
    explain.emplace(callbacks::ExplainOptions{.windows = options_.explain});
    callbacks.push_back(&*explain);
  }
  for (const CallbackHandle& c : options_.callbacks) callbacks.push_back(c.get());

  TrainingContext context;
  context.model = &model;
  context.optimizer = &opt;
  context.recipe = &recipe;
  context.plan = &plan;
  context.schedule = &schedule;
  context.epochs = options_.epochs;
  context.batch_size = options_.batch_size;
  context.samples_per_epoch = options_.drop_last ? plan.micro_batches_per_epoch() * options_.batch_size : train.size();
  context.steps_per_epoch = plan.micro_batches_per_epoch();
  context.base_lr = opt.lr();
  const std::vector<Tensor> parameters = model.parameters();
  const std::optional<DType> amp = recipe.amp_dtype(model.device());
  auto batches = std::make_unique<DeviceBatches>(*loader, model.device());
  GradScaler* scaler = model.scaler();
  context.amp_dtype = amp;
  context.scaler = scaler;
  const bool mean = model.loss().reduction() == Reduction::mean;
  const bool per_micro_batch = accumulate.normalization == Normalization::per_micro_batch;
  std::vector<Metric>& metrics = model.metrics_;
  opt.zero_grad();
  detail::RunParts parts{model, opt, scaler, schedule, context, metrics, run};
  if (resume) {
    resume->restore(parts);
    context.resumed = true;
    context.initial_epoch = run.epoch;
    if (run.epoch >= options_.epochs || context.stop_requested)
      log::info("{} is the checkpoint of a finished run ({} epoch{} trained); nothing is left to train", resume->path(),
                run.history.epochs(), run.history.epochs() == 1 ? "" : "s");
    else
      log::info("resuming from {}: epoch {}/{}, micro-batch {}/{}, {} optimizer steps done", resume->path(),
                run.epoch + 1, options_.epochs, run.next_slot + 1, plan.epoch_slots(run.epoch).size(),
                context.optimizer_steps);
  }
  for (Callback* c : callbacks) c->on_train_begin(context);
  if (resume) resume->restore_callbacks(callbacks);

  // Checkpoints: at each epoch's end, and every so many micro-batches or seconds in between.
  auto last_checkpoint = std::chrono::steady_clock::now();
  std::string last_checkpoint_path;
  const auto write_checkpoint = [&] {
    run.batch_size = options_.batch_size;  // after any back-off
    run.accumulation_factor = accumulation_factor_;
    last_checkpoint_path =
        (std::filesystem::path(checkpointing.dir) / detail::checkpoint_name(run.micro_batches)).string();
    detail::write_training_checkpoint(last_checkpoint_path, parts, signature, callbacks);
    detail::keep_newest_checkpoints(checkpointing.dir, checkpointing.keep);
    last_checkpoint = std::chrono::steady_clock::now();
  };
  // SIGINT or SIGTERM: stop between micro-batches (or at an epoch's end), with a checkpoint when
  // there is a folder for it.
  std::optional<StopSignal> stop_signal;
  if (options_.stop_on_signal) stop_signal.emplace();
  // `next` is the epoch's next slot; the slot count at the epoch's end.
  const auto stop_if_signalled = [&](int epoch, std::size_t next, std::size_t slot_count) {
    const int signal = stop_signal ? stop_signal->received() : 0;
    if (signal == 0) return;
    const std::string where = next < slot_count ? fmt::format("after micro-batch {}/{} of epoch {}/{}", next, slot_count,
                                                              epoch + 1, options_.epochs)
                                                : fmt::format("at the end of epoch {}/{}", epoch + 1, options_.epochs);
    if (checkpointing.dir.empty())
      throw Interrupted(fmt::format("training stopped by {} {} ({} optimizer steps); no checkpoint folder is set "
                                    "(checkpoint.dir), so this run cannot be continued",
                                    signal_name(signal), where, context.optimizer_steps),
                        signal);
    if (next < slot_count) {
      run.next_slot = next;
      write_checkpoint();
    }
    throw Interrupted(fmt::format("training stopped by {} {} ({} optimizer steps); checkpoint {} holds it: run the "
                                  "same training again to continue from there",
                                  signal_name(signal), where, context.optimizer_steps, last_checkpoint_path),
                      signal);
  };
  // Between micro-batches k and k + 1 of an epoch (its end has its own checkpoint and signal check):
  // a checkpoint when one is due, then a stop when a signal came.
  const auto between_micro_batches = [&](int epoch, std::size_t k, std::size_t slot_count) {
    if (k + 1 >= slot_count) return;
    const bool due =
        !checkpointing.dir.empty() &&
        ((checkpointing.every_micro_batches > 0 && run.micro_batches % checkpointing.every_micro_batches == 0) ||
         (checkpointing.every_seconds > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - last_checkpoint).count() >=
              checkpointing.every_seconds));
    if (due) {
      run.next_slot = k + 1;
      write_checkpoint();
    }
    stop_if_signalled(epoch, k + 1, slot_count);
  };

  // Memory that is not the model's (datasets held in memory, the user's tensors), for advice when
  // an allocation passes a limit.
  const MemoryStats at_start = memory_stats(model.device());
  const std::size_t live_besides_model = at_start.live_total - at_start.live_of(MemoryCategory::parameters) -
                                         at_start.live_of(MemoryCategory::optimizer_state) -
                                         at_start.live_of(MemoryCategory::gradients);
  // A checkpoint taken inside an epoch continues that epoch's metrics and micro-batches.
  bool continue_epoch = resume && run.next_slot > 0;
  for (int epoch = run.epoch; epoch < options_.epochs && !context.stop_requested; ++epoch) {
    run.epoch = epoch;
    const TrainingModeGuard mode{model, true};
    loader->set_epoch(epoch);
    batches->reset();
    metrics::MeanLoss& epoch_loss = run.epoch_loss;
    if (!continue_epoch) {
      epoch_loss.reset();
      for (Metric& m : metrics) m.reset();
    }
    reset_peak_memory(model.device());
    for (Callback* c : callbacks) c->on_epoch_begin(epoch);

    std::vector<MicroBatchSlot> slots = plan.epoch_slots(epoch);
    // With back-off, a window's metric updates wait for its end, so that a redone window counts once.
    std::vector<detail::PendingUpdate>& pending_updates = run.pending;
    bool& window_poisoned = run.window_poisoned;  // a NanGuard, or the loss scaler, drops the rest of this window
    const std::size_t first_slot = continue_epoch ? run.next_slot : 0;
    continue_epoch = false;
    for (std::size_t k = first_slot; k < slots.size(); ++k) {
      const MicroBatchSlot slot = slots[k];
      bool redo = false;
      StepRecord record;
      record.epoch = epoch;
      record.micro_batch = slot.index;
      record.window = slot.window;
      record.position = slot.position;
      record.window_micro_batches = slot.window_micro_batches;
      record.window_samples = slot.window_samples;
      record.optimizer_step = context.optimizer_steps;
      const std::int64_t first_sample = slot.index * options_.batch_size;
      if (!window_poisoned) {
        const Batch batch =
            batches->get(slot.index, k + 1 < slots.size() ? std::optional{slots[k + 1].index} : std::nullopt);
        record.micro_batch_samples = batch.size();
        if (scaler) record.loss_scale = scaler->scale();
        try {
          Tensor prediction, loss_sum;
          {
            const AutocastGuard autocast{amp};
            prediction = model.forward(batch.inputs);
            loss_sum = model.loss().batch_sum(prediction, batch.targets);
          }
          const double loss_value = loss_sum.item();
          record.loss = loss_value / static_cast<double>(batch.size());
          if (!std::isfinite(loss_value) && scaler) {
            // float16 overflowed in the forward pass: the scaler's business, like an overflow in backward.
            window_poisoned = true;
          } else if (!std::isfinite(loss_value)) {
            std::optional<NonFiniteAction> action;
            for (Callback* c : callbacks)
              if ((action = c->on_nonfinite_loss(record))) break;
            switch (action.value_or(NonFiniteAction::raise)) {
              case NonFiniteAction::raise:
                throw NonFiniteError(fmt::format("the loss is {}; lower the learning rate, check the inputs for inf and "
                                                 "NaN, or add callbacks::NanGuard to skip such windows",
                                                 loss_value));
              case NonFiniteAction::skip_window: window_poisoned = true; break;
              case NonFiniteAction::warn:
                log::warning("epoch {}, micro-batch {}: the loss is {}; going on", epoch + 1, slot.index + 1, loss_value);
                break;
            }
          }
          if (!window_poisoned) {
            // The weight that makes the window's accumulated gradient that of its mean loss (or,
            // per_micro_batch, the tutorials' mean / N).
            double weight = 1.0;
            if (per_micro_batch)
              weight = (mean ? 1.0 / static_cast<double>(batch.size()) : 1.0) / slot.window_micro_batches;
            else if (mean)
              weight = 1.0 / static_cast<double>(slot.window_samples);
            record.loss_weight = weight;
            // With loss scaling the summed loss is also multiplied by the scale, undone once per step.
            const double scale = scaler ? scaler->scale() : 1.0;
            (loss_sum * static_cast<float>(weight * scale)).backward();
            if (std::isfinite(loss_value)) {
              if (options_.backoff_on_oom) {
                pending_updates.push_back({prediction.detach(), batch.targets, loss_value});
              } else {
                const NoGradGuard no_grad;
                epoch_loss.update(prediction, batch.targets, loss_value);
                for (Metric& m : metrics) m.update(prediction, batch.targets, loss_value);
              }
            }
          }
        } catch (OutOfMemory& e) {
          // The window's partial gradients go; parameters and optimizer state are as before it.
          opt.zero_grad();
          pending_updates.clear();
          const std::int64_t micro = options_.batch_size;
          if (!options_.backoff_on_oom || micro < 2 || micro % 2 != 0) {
            e.prepend(micro_batch_context(epoch, options_.epochs, slot, plan.micro_batches_per_epoch(), first_sample,
                                          record.micro_batch_samples));
            if (options_.backoff_on_oom)
              e.append(fmt::format("\nbackoff_on_oom cannot halve a micro-batch of {}.", micro));
            e.append(fitting_advice(model, std::min(micro, train.size()), plan.max_effective_batch(), live_besides_model));
            throw;
          }
          // Back off: the window starts again from its first sample with micro-batches half as large.
          const std::int64_t window_start = slots[k - static_cast<std::size_t>(slot.position)].index * micro;
          options_.batch_size = micro / 2;
          accumulation_factor_ *= 2;
          plan = this->plan(model, train.size());
          batches.reset();
          loader = make_loader();
          loader->set_epoch(epoch);
          batches = std::make_unique<DeviceBatches>(*loader, model.device());
          slots = plan.epoch_slots(epoch);
          context.batch_size = options_.batch_size;
          context.steps_per_epoch = plan.micro_batches_per_epoch();
          std::size_t restart = 0;
          while (restart < slots.size() && slots[restart].index * options_.batch_size < window_start) ++restart;
          log::warning("out of memory at a micro-batch of {} (epoch {}, optimizer step {}): backing off to micro-batches "
                       "of {} accumulated {} per step (effective batch {}); redoing the window",
                       micro, epoch + 1, context.optimizer_steps + 1, options_.batch_size,
                       slots[restart].window_micro_batches, slots[restart].window_samples);
          k = restart;
          redo = true;
        } catch (Error& e) {
          e.prepend(micro_batch_context(epoch, options_.epochs, slot, plan.micro_batches_per_epoch(), first_sample,
                                        record.micro_batch_samples));
          throw;
        }
        if (redo) {
          --k;  // unsigned wrap-around at 0 is defined: the loop's ++k lands on the window's first micro-batch
          continue;
        }
      }
      if (slot.closes_window && !pending_updates.empty()) {
        const NoGradGuard no_grad;
        for (const detail::PendingUpdate& u : pending_updates) {
          epoch_loss.update(u.prediction, u.targets, u.loss);
          for (Metric& m : metrics) m.update(u.prediction, u.targets, u.loss);
        }
        pending_updates.clear();
      }
      const Logs running = metric_logs(epoch_loss, metrics);
      ++run.micro_batches;
      if (!slot.closes_window) {
        for (Callback* c : callbacks) c->on_micro_batch_end(record, running);
        between_micro_batches(epoch, k, slots.size());
        continue;
      }

      // The window closes (framework/training/window_close.hpp: the order, written once).
      try {
        close_window({.parameters = parameters, .optimizer = opt, .recipe = recipe, .scaler = scaler,
                      .schedule = schedule, .base_lr = context.base_lr, .lr_factor = context.lr_factor,
                      .track_norm = options_.track_grad_norm},
                     window_poisoned, context.optimizer_steps, record);
      } catch (Error& e) {
        e.prepend(micro_batch_context(epoch, options_.epochs, slot, plan.micro_batches_per_epoch(), first_sample,
                                      record.micro_batch_samples));
        throw;
      }
      window_poisoned = false;
      for (Callback* c : callbacks) c->on_micro_batch_end(record, running);
      for (Callback* c : callbacks) c->on_optimizer_step(record);
      if (context.stop_requested) break;
      between_micro_batches(epoch, k, slots.size());
    }

    Logs logs = metric_logs(epoch_loss, metrics);
    context.epoch_memory = memory_stats(model.device());
    if (validation) {
      const Evaluation val = model.evaluate(*validation, {.batch_size = options_.batch_size});
      for (const auto& [name, value] : val.logs.items()) logs.set("val_" + name, value);
    }
    schedule.on_epoch_end(logs);
    for (Callback* c : callbacks) c->on_epoch_end(epoch, logs);
    run.history.append(logs, context.epoch_memory);
    if (!checkpointing.dir.empty()) {
      run.epoch = epoch + 1;
      run.next_slot = 0;
      write_checkpoint();
    }
    stop_if_signalled(epoch, slots.size(), slots.size());
  }
  // Gradients of a window cut off by an early stop are not applied.
  opt.zero_grad();
  opt.set_lr(context.base_lr);
  const History& history = run.history;
  for (Callback* c : callbacks) c->on_train_end(history.epochs() ? history.logs().back() : Logs{});
  return history;
}

History Sequential::fit(const Dataset& train, const FitOptions& options) {
  return Trainer{options}.fit(*this, train, options.validation);
}

}  // namespace accrue
