#include "playground_server.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../example_options.hpp"

namespace playground {

using Clock = std::chrono::steady_clock;
using namespace accrue;

namespace {

constexpr std::int64_t largest_micro_batch = 4096, largest_accumulation = 4096;

// A client's value in a message: numbers, booleans and short text as they are; anything else by
// its type and size, so that a message never grows with what a client sends.
std::string describe(const nlohmann::json& value) {
  const auto text = [](const std::string& s) {
    return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  switch (value.type()) {
    case nlohmann::json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      return s.size() <= 40 ? text(s) : fmt::format("a text of {} bytes", s.size());
    }
    case nlohmann::json::value_t::array:
      return fmt::format("an array of {} item{}", value.size(), value.size() == 1 ? "" : "s");
    case nlohmann::json::value_t::object:
      return fmt::format("an object of {} key{}", value.size(), value.size() == 1 ? "" : "s");
    default:
      return value.dump();  // a number, true, false or null: short
  }
}

std::int64_t whole(const nlohmann::json& value, std::string_view key, std::int64_t low, std::int64_t high) {
  const bool integral = value.is_number_integer() || value.is_number_unsigned();
  if (!integral || (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(high)) ||
      value.get<std::int64_t>() < low || value.get<std::int64_t>() > high)
    throw SettingsError(fmt::format("{}: {} is not a whole number from {} to {}", key, describe(value), low, high));
  return value.get<std::int64_t>();
}

double number(const nlohmann::json& value, std::string_view key, double low, double high, bool low_included) {
  const double v = value.is_number() ? value.get<double>() : NAN;
  if (!std::isfinite(v) || v < low || (!low_included && v == low) || v > high)
    throw SettingsError(fmt::format("{}: {} is not a number from {} ({}) to {}", key, describe(value), low,
                                    low_included ? "included" : "excluded", high));
  return v;
}

std::string one_of(const nlohmann::json& value, std::string_view key, std::initializer_list<std::string_view> choices) {
  std::string names;
  for (std::string_view c : choices) {
    if (value.is_string() && value.get<std::string>() == c) return std::string{c};
    names += (names.empty() ? "" : ", ") + std::string{c};
  }
  throw SettingsError(fmt::format("{}: {} is not one of {}", key, describe(value), names));
}

// The body as JSON, nested at most max_settings_depth deep (refused as soon as it goes deeper,
// before anything deeper is built); SettingsError with nlohmann's reason, without its quote of the
// client's bytes.
nlohmann::json parse_json(std::string_view body) {
  const nlohmann::json::parser_callback_t depth = [](int level, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (level > max_settings_depth)
      throw SettingsError(fmt::format("the settings are nested more than {} deep", max_settings_depth));
    return true;
  };
  try {
    return nlohmann::json::parse(body.empty() ? std::string_view{"{}"} : body, depth);
  } catch (const nlohmann::json::out_of_range&) {
    throw SettingsError("the settings hold a number too large for a double");
  } catch (const nlohmann::json::exception& e) {
    std::string reason = e.what();
    reason = reason.substr(0, reason.find("; last read"));
    if (const std::size_t p = reason.find("] "); reason.starts_with("[json.exception.") && p != std::string::npos)
      reason = reason.substr(p + 2);
    throw SettingsError(fmt::format("the settings are not JSON: {}", reason));
  }
}

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

}  // namespace

json Settings::to_json() const {
  return {{"model", model},
          {"micro_batch", micro_batch},
          {"accumulate", accumulate},
          {"memory_cap_mib", memory_cap_mib},
          {"amp", amp},
          {"recompute", recompute},
          {"normalization", normalization},
          {"lr", lr},
          {"schedule", schedule},
          {"epochs", epochs},
          {"max_steps", max_steps},
          {"pace_ms", pace_ms},
          {"seed", seed}};
}

Settings parse_settings(std::string_view body, std::int64_t training_samples) {
  const nlohmann::json j = parse_json(body);
  if (!j.is_object()) throw SettingsError(fmt::format("the settings must be a JSON object, got {}", describe(j)));
  Settings s;
  const std::string known =
      "model, micro_batch, accumulate, memory_cap_mib, amp, recompute, normalization, lr, schedule, epochs, "
      "max_steps, pace_ms, seed";
  for (const auto& [key, value] : j.items()) {
    if (key == "model")
      s.model = one_of(value, key, {"mlp", "cnn"});
    else if (key == "micro_batch")
      s.micro_batch = whole(value, key, 1, std::min(largest_micro_batch, training_samples));
    else if (key == "accumulate")
      s.accumulate = whole(value, key, 1, largest_accumulation);
    else if (key == "memory_cap_mib") {
      s.memory_cap_mib = number(value, key, 0, 1 << 20, true);
      if (s.memory_cap_mib > 0 && s.cap_bytes() == 0)
        throw SettingsError(fmt::format("memory_cap_mib: {} MiB is less than one byte; 0 means no cap", describe(value)));
    } else if (key == "amp") {
      if (!value.is_boolean()) throw SettingsError(fmt::format("amp: {} is not true or false", describe(value)));
      s.amp = value.get<bool>();
    } else if (key == "recompute") {
      if (!value.is_boolean()) throw SettingsError(fmt::format("recompute: {} is not true or false", describe(value)));
      s.recompute = value.get<bool>();
    } else if (key == "normalization")
      s.normalization = one_of(value, key, {"per_window", "per_micro_batch"});
    else if (key == "lr")
      s.lr = number(value, key, 0, 10, false);
    else if (key == "schedule")
      s.schedule = one_of(value, key, {"constant", "warmup_cosine"});
    else if (key == "epochs")
      s.epochs = whole(value, key, 1, 20);
    else if (key == "max_steps")
      s.max_steps = whole(value, key, 0, 1'000'000);
    else if (key == "pace_ms")
      s.pace_ms = whole(value, key, 0, 2000);
    else if (key == "seed")
      s.seed = static_cast<std::uint64_t>(whole(value, key, 0, std::int64_t{1} << 53));
    else
      throw SettingsError(fmt::format("unknown setting '{}'; the settings are {}", http::printable(key, 40), known));
  }
  if (s.micro_batch * s.accumulate > training_samples)
    throw SettingsError(fmt::format("micro_batch x accumulate = {} x {} = {} is more than the {} training samples",
                                    s.micro_batch, s.accumulate, s.micro_batch * s.accumulate, training_samples));
  return s;
}

// ---- EventLog ----

void EventLog::begin_run(std::int64_t run) {
  const std::lock_guard lock{mutex_};
  run_ = run;
  events_.clear();
  changed();
}

void EventLog::publish(std::string event) {
  const std::lock_guard lock{mutex_};
  events_.push_back(std::move(event));
  changed();
}

std::vector<std::string> EventLog::take(Cursor& cursor) {
  const std::lock_guard lock{mutex_};
  if (cursor.run != run_) cursor = {run_, 0};
  std::vector<std::string> out(events_.begin() + static_cast<std::ptrdiff_t>(std::min(cursor.next, events_.size())),
                               events_.end());
  cursor.next = events_.size();
  return out;
}

std::uint64_t EventLog::subscribe(std::function<void()> wake) {
  const std::lock_guard lock{mutex_};
  subscribers_.emplace_back(next_id_, std::move(wake));
  return next_id_++;
}

void EventLog::unsubscribe(std::uint64_t id) {
  const std::lock_guard lock{mutex_};
  std::erase_if(subscribers_, [&](const auto& s) { return s.first == id; });
}

void EventLog::changed() {
  for (const auto& [id, wake] : subscribers_) wake();
}

// ---- The run's events ----

// Publishes what fit does: the run's banner and plan at its start, then each micro-batch (at most
// every 50 ms when training outpaces a page, with every optimizer step's point in between), and
// waits pace_ms after each micro-batch so that a class can watch. Ends fit (throws Stopped) once
// stop() asks, and stops it at max_steps.
class Playground::Stream final : public Callback {
 public:
  // `datasets`: the data held in memory before the run, left out of the measurements as the plan
  // leaves it out; `cap`: the cap on the model's memory (0: none).
  Stream(Playground& owner, std::int64_t run, Settings settings, std::size_t datasets, std::size_t cap)
      : owner_(owner), run_(run), settings_(std::move(settings)), datasets_(datasets), cap_(cap) {}

  bool needs_grad_norm() const override { return true; }

  void on_train_begin(TrainingContext& context) override {
    context_ = &context;
    const Sequential& model = *context.model;
    const MemoryPlan plan = model.memory_plan(context.batch_size);
    owner_.events_.publish(json{
        {"type", "run"},
        {"run", run_},
        {"settings", settings_.to_json()},
        {"banner", callbacks::training_banner(context)},
        {"categories", category_names()},
        {"plan", plan.peak},
        {"plan_peak", plan.peak_total},
        {"cap", cap_},
        {"total_steps", settings_.max_steps > 0 ? std::min(settings_.max_steps, context.plan->total_optimizer_steps())
                                                : context.plan->total_optimizer_steps()},
        {"micro_batches_per_epoch", context.steps_per_epoch}}
                               .dump());
    allocator(model.device()).take_interval_peak();
    last_publish_ = Clock::time_point{};
    resumed_ = Clock::now();
  }

  void on_micro_batch_end(const StepRecord& record, const Logs& /*running*/) override {
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
    const double loss = record.micro_batch_samples > 0 ? record.loss : NAN;
    if (record.closes_window())
      steps_.push_back({{"step", record.window + 1},
                        {"loss", finite(window_.take())},
                        {"lr", record.lr},
                        {"applied", record.status == StepRecord::Status::applied},
                        {"norm", finite(record.grad_norm_before.value_or(NAN))}});
    {
      const std::lock_guard lock{owner_.mutex_};
      ++owner_.micro_batches_;
      owner_.optimizer_steps_ = record.optimizer_step;
      owner_.last_loss_ = loss;
    }
    const Clock::time_point now = Clock::now();
    last_ = json{{"type", "micro_batch"},
                 {"run", run_},
                 {"epoch", record.epoch},
                 {"micro_batch", record.micro_batch},
                 {"k", record.position + 1},
                 {"n", record.window_micro_batches},
                 {"window", record.window},
                 {"samples", record.micro_batch_samples},
                 {"loss", finite(loss)},
                 {"loss_weight", record.loss_weight},
                 {"closes", record.closes_window()},
                 {"status", status_name(record.status)},
                 {"optimizer_steps", record.optimizer_step},
                 {"ms_per_sample", samples_ > 0 ? 1e3 * std::chrono::duration<double>(computing_).count() /
                                                      static_cast<double>(samples_)
                                                : 0.0}};
    if (settings_.pace_ms > 0 || now - last_publish_ >= std::chrono::milliseconds{50}) publish(now);
    std::unique_lock lock{owner_.mutex_};
    if (settings_.pace_ms > 0)
      owner_.stop_requested_.wait_for(lock, std::chrono::milliseconds{settings_.pace_ms},
                                      [&] { return owner_.stopping_; });
    if (owner_.stopping_) {
      lock.unlock();
      publish(Clock::now());
      throw Stopped{};
    }
    resumed_ = Clock::now();
  }

  void on_optimizer_step(const StepRecord& record) override {
    if (settings_.max_steps > 0 && record.optimizer_step >= settings_.max_steps) context_->stop();
  }

  void on_train_end(const Logs& /*logs*/) override { publish(Clock::now()); }

 private:
  // The last micro-batch's event, with the memory peak and the optimizer steps since the last one.
  void publish(Clock::time_point now) {
    if (last_.is_null()) return;
    last_["memory"] = peak_parts_;
    last_["memory_total"] = peak_total_;
    last_["steps"] = std::move(steps_);
    owner_.events_.publish(last_.dump());
    last_ = nullptr;
    steps_ = json::array();
    peak_total_ = 0;
    last_publish_ = now;
  }

  Playground& owner_;
  std::int64_t run_;
  Settings settings_;
  std::size_t datasets_, cap_;
  TrainingContext* context_ = nullptr;
  WindowLoss window_;
  json last_, steps_ = json::array();
  std::vector<std::size_t> peak_parts_ = std::vector<std::size_t>(memory_category_count, 0);
  std::size_t peak_total_ = 0;
  Clock::time_point last_publish_;
  Clock::time_point resumed_;  // when the current micro-batch's training began
  Clock::duration computing_{};
  std::int64_t samples_ = 0;
};

// ---- Playground ----

Playground::Playground(Dataset train, Device device) : train_(std::move(train)), device_(device) {}

Playground::~Playground() {
  closing_ = true;
  stop();
  const std::lock_guard control{control_};
  join_finished();
}

Sequential Playground::build(const Settings& s) const {
  manual_seed(s.seed);
  Sequential model = s.model == "cnn" ? examples::tutorial_cnn() : examples::tutorial_mlp();
  model.to(device_);
  optim::Recipe recipe = optim::SGD{.lr = s.lr};
  if (s.accumulate > 1) recipe = recipe.accumulate(static_cast<int>(s.accumulate));
  if (s.amp) recipe = recipe.amp();
  model.compile(recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});
  if (s.recompute) model.recompute(RecomputePolicy::every());
  return model;
}

json Playground::plan(const Settings& s) const {
  const Sequential model = build(s);
  const std::size_t cap = s.cap_bytes();
  // Under a cap, the run keeps accumulation to its least memory (defers no weight gradients).
  const MemoryPlan plan = model.memory_plan(s.micro_batch, s.accumulate > 1, cap > 0);
  json out{{"categories", category_names()},
           {"micro_batch", s.micro_batch},
           {"accumulate", s.accumulate},
           {"effective_batch", s.micro_batch * s.accumulate},
           {"plan", plan.peak},
           {"peak", plan.peak_total},
           {"precision", plan.precision},
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

void Playground::join_finished() {
  if (worker_.joinable()) worker_.join();
}

std::optional<std::int64_t> Playground::start(const Settings& s) {
  const std::lock_guard control{control_};
  {
    const std::lock_guard lock{mutex_};
    if (running_ || closing_) return std::nullopt;
  }
  join_finished();  // the last run's thread, which has published its end
  const std::lock_guard lock{mutex_};
  running_ = true;
  stopping_ = false;
  settings_ = s;
  micro_batches_ = optimizer_steps_ = 0;
  last_loss_ = NAN;
  outcome_.clear();
  const std::int64_t run = ++run_;
  events_.begin_run(run);
  events_.publish(json{{"type", "start"}, {"run", run}, {"settings", s.to_json()}}.dump());
  ++threads_alive_;
  worker_ = std::thread([this, run, s] { train(run, s); });
  return run;
}

bool Playground::stop() {
  const std::lock_guard control{control_};
  {
    const std::lock_guard lock{mutex_};
    if (!running_) return false;
    stopping_ = true;
  }
  stop_requested_.notify_all();
  join_finished();
  return true;
}

void Playground::train(std::int64_t run, Settings s) {
  json end{{"type", "end"}, {"run", run}, {"outcome", "finished"}, {"message", ""}, {"oom", false}};
  // The cap is on the model's memory: the limit adds what is live before the run (the datasets).
  const MemoryStats before = memory_stats(device_);
  const std::size_t cap = s.cap_bytes();
  try {
    set_memory_limit(device_, cap > 0 ? before.live_total + cap : 0);
    Sequential model = build(s);
    model.fit(train_, {.epochs = static_cast<int>(s.epochs),
                       .batch_size = s.micro_batch,
                       .accumulate_options = {.normalization = normalization_of(s.normalization)},
                       .schedule = s.schedule == "warmup_cosine"
                                       ? schedules::warmup_cosine({.warmup_ratio = 0.1, .min_lr_ratio = 0.05})
                                       : LrSchedule{},
                       .callbacks = {Stream{*this, run, s, before.live_of(MemoryCategory::data), cap}},
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
  set_memory_limit(device_, 0);
  {
    const std::lock_guard lock{mutex_};
    end["optimizer_steps"] = optimizer_steps_;
    end["micro_batches"] = micro_batches_;
    outcome_ = end["outcome"];
    running_ = false;
  }
  events_.publish(end.dump());
  --threads_alive_;
}

json Playground::status() const {
  const std::lock_guard lock{mutex_};
  const MemoryStats memory = memory_stats(device_);
  return {{"running", running_},
          {"run", run_},
          {"settings", run_ > 0 ? settings_.to_json() : json(nullptr)},
          {"micro_batches", micro_batches_},
          {"optimizer_steps", optimizer_steps_},
          {"loss", finite(last_loss_)},
          {"outcome", outcome_},
          {"memory_live", memory.live_total},
          {"training_threads", threads_alive_.load()},
          {"watching", streams_.load()}};
}

// ---- HTTP ----

namespace {

http::Response answer(int status, const json& body) {
  return {status, body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"};
}

}  // namespace

// A page watching: a hello with the status, then every event of the log as it comes.
class Playground::Watcher final : public http::EventFeed {
 public:
  Watcher(Playground& owner, std::function<void()> wake) : owner_(owner), id_(owner.events_.subscribe(std::move(wake))) {}
  ~Watcher() override {
    owner_.events_.unsubscribe(id_);
    --owner_.streams_;
  }
  std::string take() override {
    std::string frames;
    if (!greeted_) {
      greeted_ = true;
      json hello = owner_.status();
      hello["type"] = "hello";
      frames += "data: " + hello.dump() + "\n\n";
    }
    for (const std::string& e : owner_.events_.take(cursor_)) frames += "data: " + e + "\n\n";
    return frames;
  }

 private:
  Playground& owner_;
  std::uint64_t id_;
  EventLog::Cursor cursor_;
  bool greeted_ = false;
};

void Playground::serve(http::Server& server, std::string page) {
  server.route("GET", "/", [page = std::move(page)](const http::Request&) {
    return http::Response{200, page, "text/html; charset=utf-8"};
  });
  server.route("GET", "/api/status", [this](const http::Request&) { return answer(200, status()); });
  // Planning builds a model, and starting or stopping waits for the last run's thread: off the
  // network threads.
  server.route("POST", "/api/plan", [this](const http::Request& r) { return plan_request(r); }, true);
  server.route("POST", "/api/runs", [this](const http::Request& r) { return start_request(r); }, true);
  server.route("POST", "/api/stop", [this](const http::Request&) { return stop_request(); }, true);
  server.route_stream("/api/events", [this](const http::Request&, std::function<void()> wake)
                                         -> std::variant<http::Response, std::unique_ptr<http::EventFeed>> {
    if (++streams_ > max_streams) {
      --streams_;
      return http::error(503, fmt::format("{} pages are watching already; close one", max_streams));
    }
    return std::make_unique<Watcher>(*this, std::move(wake));
  });
}

http::Response Playground::plan_request(const http::Request& request) const {
  try {
    const Settings s = parse_settings(request.body, static_cast<std::int64_t>(train_.size()));
    if (status()["running"]) return http::error(409, "a run is going: its plan is in its \"run\" event");
    return answer(200, plan(s));
  } catch (const SettingsError& e) {
    return http::error(400, e.what());
  }
}

http::Response Playground::start_request(const http::Request& request) {
  try {
    const Settings s = parse_settings(request.body, static_cast<std::int64_t>(train_.size()));
    if (const std::optional<std::int64_t> run = start(s)) return answer(201, json{{"run", *run}, {"settings", s.to_json()}});
    return answer(409, json{{"error", "a run is going: watch it (GET /api/events) or stop it (POST /api/stop) first"},
                            {"status", status()}});
  } catch (const SettingsError& e) {
    return http::error(400, e.what());
  }
}

http::Response Playground::stop_request() {
  const std::int64_t run = status()["run"];
  if (!stop()) return http::error(409, "no run is going");
  return answer(200, json{{"stopped", run}});
}

}  // namespace playground
