#include "run.hpp"

#include <cmath>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "../example_options.hpp"

namespace playground {

using Clock = std::chrono::steady_clock;
using namespace accrue;

namespace {

Normalization normalization_of(const std::string& name) {
  return name == "per_micro_batch" ? Normalization::per_micro_batch : Normalization::per_window;
}

// The loss of a window: its micro-batches' mean losses weighted by their samples.
struct WindowLoss {
  double sum = 0, samples = 0;
  void add(const StepRecord& r) {
    sum += r.loss * static_cast<double>(r.micro_batch_samples);
    samples += static_cast<double>(r.micro_batch_samples);
  }
  double take() {
    const double mean = samples > 0 ? sum / samples : NAN;
    *this = {};
    return mean;
  }
};

json finite(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// Thrown by Stream at a micro-batch's end to end fit when the run is stopped.
struct Stopped {};

// What the run has done, for its end event.
struct Counts {
  std::int64_t micro_batches = 0, optimizer_steps = 0;
};

// Publishes what fit does: the run's banner and plan at its start, then each micro-batch (at most
// every 50 ms when training outpaces a page, with every optimizer step's point in between), and
// waits pace_ms after each micro-batch so that a class can watch. Ends fit (throws Stopped) once
// the host says stop, and stops it at max_steps.
class Stream final : public Callback {
 public:
  // `datasets`: the data held in memory before the run, left out of the measurements as the plan
  // leaves it out; `cap`: the cap on the model's memory (0: none).
  // `check`: the accumulation check of the run's first window (accumulation_check).
  Stream(RunHost& host, Counts& counts, std::int64_t run, Settings settings, std::size_t datasets, std::size_t cap,
         const Dataset& validation, json check)
      : host_(host), counts_(counts), run_(run), settings_(std::move(settings)), datasets_(datasets), cap_(cap),
        validation_(validation), check_(std::move(check)) {}

  bool needs_grad_norm() const override { return true; }

  void on_train_begin(TrainingContext& context) override {
    context_ = &context;
    total_steps_ = settings_.max_steps > 0 ? std::min(settings_.max_steps, context.plan->total_optimizer_steps())
                                           : context.plan->total_optimizer_steps();
    validate_every_ = std::max<std::int64_t>(1, total_steps_ / 20);
    const Model& model = *context.model;
    const MemoryPlan plan = model.memory_plan(context.batch_size);
    const PrecisionEffect precision = model.precision_effect(context.batch_size, settings_.accumulate > 1, cap_ > 0);
    host_.publish({{"type", "run"},
                   {"run", run_},
                   {"settings", settings_.to_json()},
                   {"banner", callbacks::training_banner(context)},
                   {"categories", category_names()},
                   {"plan", plan.peak},
                   {"plan_peak", plan.peak_total},
                   {"precision", plan.precision},
                   {"precision_effect", precision.str()},
                   {"float32_plan", precision.float32.peak},
                   {"float32_peak", precision.float32.peak_total},
                   {"cap", cap_},
                   {"accumulation_check", check_},
                   {"total_steps", total_steps_},
                   {"micro_batches_per_epoch", context.steps_per_epoch}});
    allocator(model.device()).take_interval_peak();
    last_publish_ = Clock::time_point{};
    resumed_ = Clock::now();
  }

  void on_micro_batch_end(const StepRecord& record, const Logs& running) override {
    // Training time only: the pauses between micro-batches (pace_ms) and publishing left out.
    computing_ += Clock::now() - resumed_;
    samples_ += record.micro_batch_samples;
    const MemoryPeak peak = allocator(context_->model->device()).take_interval_peak();
    const std::size_t held = std::min(peak.parts[static_cast<int>(MemoryCategory::data)], datasets_);
    if (peak.total - held >= peak_total_) {
      peak_total_ = peak.total - held;
      peak_parts_.assign(peak.parts.begin(), peak.parts.end());
      peak_parts_[static_cast<int>(MemoryCategory::data)] -= held;
    }
    window_.add(record);
    if (record.closes_window())
      steps_.push_back({{"step", record.window + 1},
                        {"loss", finite(window_.take())},
                        {"lr", record.lr},
                        {"applied", record.status == StepRecord::Status::applied},
                        {"scale", record.loss_scale ? json(*record.loss_scale) : json(nullptr)},
                        {"norm", finite(record.grad_norm_before.value_or(NAN))}});
    ++counts_.micro_batches;
    counts_.optimizer_steps = record.optimizer_step;
    const Clock::time_point now = Clock::now();
    last_ = json{{"type", "micro_batch"},
                 {"run", run_},
                 {"epoch", record.epoch},
                 {"micro_batch", record.micro_batch},
                 {"k", record.position + 1},
                 {"n", record.window_micro_batches},
                 {"window", record.window},
                 {"samples", record.micro_batch_samples},
                 {"loss", finite(record.micro_batch_samples > 0 ? record.loss : NAN)},
                 {"loss_weight", record.loss_weight},
                 {"closes", record.closes_window()},
                 {"status", status_name(record.status)},
                 {"optimizer_steps", record.optimizer_step},
                 {"micro_batches", counts_.micro_batches},
                 {"accuracy", finite(running.get("accuracy").value_or(NAN))},
                 {"ms_per_sample", samples_ > 0 ? 1e3 * std::chrono::duration<double>(computing_).count() /
                                                      static_cast<double>(samples_)
                                                : 0.0}};
    if (settings_.pace_ms > 0 || now - last_publish_ >= std::chrono::milliseconds{50}) publish(now);
    if (host_.should_stop(std::chrono::milliseconds{settings_.pace_ms})) {
      publish(Clock::now());
      throw Stopped{};
    }
    resumed_ = Clock::now();
  }

  void on_optimizer_step(const StepRecord& record) override {
    if (record.optimizer_step % validate_every_ == 0 || record.optimizer_step == total_steps_) validate(record.optimizer_step);
    if (settings_.max_steps > 0 && record.optimizer_step >= settings_.max_steps) context_->stop();
  }

  void on_train_end(const Logs& /*logs*/) override {
    if (validated_ < counts_.optimizer_steps) validate(counts_.optimizer_steps);
    publish(Clock::now());
  }

 private:
  // Loss and accuracy on the validation samples, at the micro-batch size (so that the cap holds),
  // left out of the memory measured and of the time per sample.
  void validate(std::int64_t step) {
    const Clock::time_point began = Clock::now();
    const Evaluation result = context_->model->evaluate(validation_, {.batch_size = settings_.micro_batch});
    allocator(context_->model->device()).take_interval_peak();
    resumed_ += Clock::now() - began;
    validated_ = step;
    host_.publish({{"type", "validation"},
                   {"run", run_},
                   {"step", step},
                   {"loss", finite(result.loss)},
                   {"accuracy", finite(result.logs.get("accuracy").value_or(NAN))}});
  }

  // The last micro-batch's event, with the memory peak and the optimizer steps since the last one.
  void publish(Clock::time_point now) {
    if (last_.is_null()) return;
    last_["memory"] = peak_parts_;
    last_["memory_total"] = peak_total_;
    last_["steps"] = std::move(steps_);
    host_.publish(last_);
    last_ = nullptr;
    steps_ = json::array();
    peak_total_ = 0;
    last_publish_ = now;
  }

  RunHost& host_;
  Counts& counts_;
  std::int64_t run_;
  Settings settings_;
  std::size_t datasets_, cap_;
  const Dataset& validation_;
  json check_;
  TrainingContext* context_ = nullptr;
  std::int64_t total_steps_ = 0, validate_every_ = 1, validated_ = 0;
  WindowLoss window_;
  json last_, steps_ = json::array();
  std::vector<std::size_t> peak_parts_ = std::vector<std::size_t>(memory_category_count, 0);
  std::size_t peak_total_ = 0;
  Clock::time_point last_publish_;
  Clock::time_point resumed_;  // when the current micro-batch's training began
  Clock::duration computing_{};
  std::int64_t samples_ = 0;
};

}  // namespace

Sequential build_model(const Settings& s, Device device) {
  manual_seed(s.seed);
  Sequential model = s.model == "cnn" ? examples::tutorial_cnn() : examples::tutorial_mlp();
  model.to(device);
  optim::Recipe recipe = optim::SGD{.lr = s.lr};
  if (s.accumulate > 1)
    recipe = recipe.accumulate(static_cast<int>(s.accumulate), {.normalization = normalization_of(s.normalization)});
  if (s.precision == "bfloat16") recipe = recipe.amp(dtype::bf16);
  // float16 scales the loss; its scale grows after 50 clean steps (PyTorch's default is 2000), so
  // that a short run shows it climb until a step overflows and it backs off again.
  if (s.precision == "float16")
    recipe = recipe.amp({.dtype = dtype::f16,
                         .loss_scaling = true,
                         .scaler = {.init_scale = s.overflow ? 0x1p40 : 65536.0, .growth_interval = 50}});
  model.compile(recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});
  if (s.recompute) model.recompute(RecomputePolicy::every());
  return model;
}

json plan(const Settings& s, Device device) {
  const Sequential model = build_model(s, device);
  const std::size_t cap = s.cap_bytes();
  // Under a cap, the run keeps accumulation to its least memory (defers no weight gradients).
  const PrecisionEffect effect = model.precision_effect(s.micro_batch, s.accumulate > 1, cap > 0);
  const MemoryPlan& plan = effect.mixed;
  json out{{"categories", category_names()},
           {"micro_batch", s.micro_batch},
           {"accumulate", s.accumulate},
           {"effective_batch", s.micro_batch * s.accumulate},
           {"plan", plan.peak},
           {"peak", plan.peak_total},
           {"precision", plan.precision},
           {"precision_effect", effect.str()},
           {"float32_plan", effect.float32.peak},
           {"float32_peak", effect.float32.peak_total},
           {"recompute", model.recompute_policy().str()},
           {"cap", cap},
           {"fits", cap == 0 || plan.peak_total <= cap},
           {"advice", nullptr},
           {"message", ""}};
  if (out["fits"]) return out;
  std::string message = fmt::format(
      "model.memory_plan({}) peaks at {}, past the cap of {}: training would stop with OutOfMemory in its "
      "first window.",
      s.micro_batch, format_bytes(plan.peak_total), format_bytes(cap));
  if (const std::optional<std::int64_t> m = model.fitting_micro_batch(s.micro_batch, cap, 0)) {
    const std::int64_t effective = s.micro_batch * s.accumulate, k = ceil_div(effective, *m);
    const std::size_t peak = model.memory_plan(*m, true, true).peak_total;
    out["advice"] = {{"micro_batch", *m}, {"accumulate", k}, {"peak", peak}};
    message += fmt::format(
        " Micro-batches of {} with accumulate({}) keep the effective batch of {} and are planned to "
        "peak at {}, within the cap.",
        *m, k, *m * k, format_bytes(peak));
  } else {
    message += fmt::format(" Even a micro-batch of 1 is planned to peak at {}: raise the cap.",
                           format_bytes(model.memory_plan(1, true, true).peak_total));
  }
  out["message"] = message;
  return out;
}

Dataset training_data(const Dataset& train, const Settings& s) {
  if (!s.uneven) return train;
  std::vector<std::int32_t> labels = train.targets().to_vector<std::int32_t>();
  Generator pick{s.seed + 1};
  for (std::int32_t& label : labels)
    if (pick.below(2) == 0) label = -100;  // CrossEntropy's ignore_index: counted for nothing
  return Dataset{train.inputs(), Tensor::from(labels, {static_cast<std::int64_t>(labels.size())}),
                 train.name() + ", half the labels hidden"};
}

json accumulation_check(Sequential& model, const Dataset& data, const Settings& s) {
  json out{{"micro_batch", s.micro_batch}, {"accumulate", s.accumulate}};
  for (const Normalization n : {Normalization::per_window, Normalization::per_micro_batch}) {
    const AccumulationCheck check = verify_accumulation(
        model, data, {.micro_batches = static_cast<int>(s.accumulate), .micro_batch = s.micro_batch, .normalization = n,
                      .training = false});
    out[std::string{normalization_name(n)}] = check.max_relative_difference;
  }
  std::vector<std::int64_t> units;
  for (std::int64_t k = 0; k < s.accumulate; ++k)
    units.push_back(model.loss().units(data.slice(k * s.micro_batch, (k + 1) * s.micro_batch).target()));
  out["units"] = units;
  return out;
}

json train(const Dataset& full, const Dataset& validation, Device device, std::int64_t run, const Settings& s,
           RunHost& host) {
  json end{{"type", "end"}, {"run", run}, {"outcome", "finished"}, {"message", ""}, {"oom", false}};
  // The cap is on the model's memory: the limit adds what is live before the run (the datasets).
  const MemoryStats before = memory_stats(device);
  const std::size_t cap = s.cap_bytes();
  Counts counts;
  try {
    Sequential model = build_model(s, device);
    const Dataset data = training_data(full, s);
    json check = accumulation_check(model, data, s);  // before the cap: one batch of the whole window
    set_memory_limit(device, cap > 0 ? before.live_total + cap : 0);
    model.fit(data, {.epochs = static_cast<int>(s.epochs),
                     .batch_size = s.micro_batch,
                     .schedule = s.schedule == "warmup_cosine"
                                     ? schedules::warmup_cosine({.warmup_ratio = 0.1, .min_lr_ratio = 0.05})
                                     : LrSchedule{},
                     .callbacks = {Stream{host, counts, run, s, before.live_of(MemoryCategory::data), cap, validation,
                                          std::move(check)}},
                     .seed = s.seed,
                     .verbose = 0,
                     .stop_on_signal = false});
  } catch (const Stopped&) {
    end["outcome"] = "stopped";
  } catch (const OutOfMemory& e) {
    end["outcome"] = "failed";
    end["oom"] = true;
    end["message"] = e.what();
  } catch (const std::exception& e) {
    end["outcome"] = "failed";
    end["message"] = e.what();
  }
  set_memory_limit(device, 0);
  end["optimizer_steps"] = counts.optimizer_steps;
  end["micro_batches"] = counts.micro_batches;
  return end;
}

namespace {

// The worker's host: events as lines on a stream, control lines read by a thread of their own.
class LineHost final : public RunHost {
 public:
  LineHost(std::istream& control, std::FILE* events) : events_(events) {
    // Detached, holding the state it changes: it may be blocked reading when the run ends, and
    // the process ends with the run.
    std::thread([state = state_, &control] {
      for (std::string line; std::getline(control, line);) state->command(line);
      state->command("stop");  // the server has gone: nobody watches this run
    }).detach();
  }

  void publish(const json& event) override {
    const std::string line = event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    const std::lock_guard lock{state_->mutex};
    std::fwrite(line.data(), 1, line.size(), events_);
    std::fflush(events_);
  }

  bool should_stop(std::chrono::milliseconds pace) override {
    State& s = *state_;
    std::unique_lock lock{s.mutex};
    if (pace.count() > 0) s.changed.wait_for(lock, pace, [&] { return s.stopping; });
    s.changed.wait(lock, [&] { return s.stopping || !s.paused; });
    return s.stopping;
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    bool stopping = false, paused = false;
    void command(const std::string& line) {
      {
        const std::lock_guard lock{mutex};
        if (line == "stop") stopping = true;
        else if (line == "pause") paused = true;
        else if (line == "resume") paused = false;
      }
      changed.notify_all();
    }
  };
  std::FILE* events_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

void run_worker(const Dataset& data, const Dataset& validation, Device device, std::int64_t run,
                std::istream& control, std::FILE* events) {
  std::string first;
  std::getline(control, first);
  LineHost host{control, events};
  try {
    const Settings settings = parse_settings(first, static_cast<std::int64_t>(data.size()));
    host.publish(train(data, validation, device, run, settings, host));
  } catch (const SettingsError& e) {
    host.publish({{"type", "end"}, {"run", run}, {"outcome", "failed"}, {"oom", false}, {"optimizer_steps", 0},
                  {"micro_batches", 0}, {"message", e.what()}});
  }
}

}  // namespace playground
