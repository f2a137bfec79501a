#include "training_checkpoint.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <typeinfo>

#include "json_state.hpp"
#include "../framework/autograd/autograd.hpp"
#include "../framework/core/files.hpp"
#include "../framework/core/log.hpp"
#include "../framework/optim/optimizer.hpp"
#include "../framework/core/random.hpp"
#include "../framework/serialization/checkpoint.hpp"
#include "../framework/serialization/json_text.hpp"
#include "../framework/core/utf8.hpp"

namespace accrue::detail {
namespace {

using json = nlohmann::json;

// JSON has no inf or NaN (a logged loss can be either): those go as strings.
json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

double to_double(const json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  throw ValueError(fmt::format("'{}' is not a number", s));
}

// ---- The schema. Each part of the state with fixed fields is one list of them, fields(f, part),
// which the writer and the reader both walk, so that the two cannot drift apart. The keys are
// those every earlier version wrote.

// Writes each field into a JSON object.
struct Write {
  json& out;
  template <class T>
  void operator()(const char* key, const T& value) const {
    out[key] = value;
  }
};

// Reads each field from a JSON object; every integer goes through json_integer (input from disk).
struct Read {
  const json& in;
  template <class T>
  void operator()(const char* key, T& value) const {
    const json& j = in.at(key);
    if constexpr (std::is_same_v<T, bool> || std::is_floating_point_v<T>) {
      value = j.get<T>();
    } else if constexpr (std::is_integral_v<T>) {
      value = json_integer<T>(j, key);
    } else {  // a fixed number of integers (memory by category)
      ACCRUE_CHECK(j.is_array() && j.size() == value.size(), "'{}' is not {} values", key, value.size());
      for (std::size_t i = 0; i < value.size(); ++i) value[i] = json_integer<typename T::value_type>(j[i], key);
    }
  }
};

// Where the loop stands ("position").
struct Position {
  int epoch = 0;
  std::size_t next_slot = 0;
  std::int64_t micro_batches = 0, optimizer_steps = 0;
  bool window_poisoned = false, stop_requested = false;
};
template <class F>
void fields(F&& f, Position& p) {
  f("epoch", p.epoch);
  f("next_slot", p.next_slot);
  f("micro_batches", p.micro_batches);
  f("optimizer_steps", p.optimizer_steps);
  f("window_poisoned", p.window_poisoned);
  f("stop_requested", p.stop_requested);
}

// What the run reached beside it, at the top level: its micro-batch and accumulation factor (after
// any back-off), its shuffling seed, the learning-rate factor of ReduceLROnPlateau.
struct Settings {
  std::uint64_t loader_seed = 0;
  std::int64_t batch_size = 0;
  int accumulation_factor = 1;
  double lr_factor = 1.0;
};
template <class F>
void fields(F&& f, Settings& s) {
  f("loader_seed", s.loader_seed);
  f("batch_size", s.batch_size);
  f("accumulation_factor", s.accumulation_factor);
  f("lr_factor", s.lr_factor);
}

template <class F>
void fields(F&& f, GradScaler::State& s) {
  f("scale", s.scale);
  f("growth_tracker", s.growth_tracker);
  f("skipped_steps", s.skipped_steps);
}

template <class F>
void fields(F&& f, MemoryStats& m) {
  f("live", m.live);
  f("peak", m.peak);
  f("live_total", m.live_total);
  f("peak_total", m.peak_total);
  f("reserved", m.reserved);
  f("limit", m.limit);
}

// Each process's random generators as [seed, offset]: the model's and the default one.
struct Generators {
  std::array<std::uint64_t, 2> model{}, fallback{};
};
template <class F>
void fields(F&& f, Generators& g) {
  f("model", g.model);
  f("default", g.fallback);
}

template <class T>
json write_fields(T part) {  // a copy: fields() walks a part the reader fills too
  json out = json::object();
  fields(Write{out}, part);
  return out;
}

template <class T>
T read_fields(const json& in) {
  T part{};
  fields(Read{in}, part);
  return part;
}

std::string callback_type(const Callback& c) { return typeid(c).name(); }

// What differs between the processes of a distributed run: the random generators (dropout draws
// from each process's own) and each process's share of the epoch's running loss and metrics.
json own_state(const RunParts& parts) {
  const Generator& g = parts.model.generator();
  const Generator& d = default_generator();
  json metrics = json::array();
  for (const Metric& m : parts.metrics) {
    const auto s = m.state();
    metrics.push_back(s ? json{{"name", m.name()}, {"state", *s}} : json{{"name", m.name()}, {"state", nullptr}});
  }
  return {{"generators", write_fields(Generators{{g.seed(), g.offset()}, {d.seed(), d.offset()}})},
          {"epoch_loss", parts.run.epoch_loss.state()},
          {"metrics", metrics}};
}

// Where the loop stands, and what the run reached beside it.
json position_json(const RunParts& parts) {
  const RunState& r = parts.run;
  const TrainingContext& c = parts.context;
  json out = write_fields(Settings{r.loader_seed, r.batch_size, r.accumulation_factor, c.lr_factor});
  out["position"] = write_fields(Position{r.epoch, r.next_slot, r.micro_batches, c.optimizer_steps, r.window_poisoned,
                                          c.stop_requested});
  return out;
}

json history_json(const History& history) {
  json out = json::array();
  for (std::size_t e = 0; e < history.epochs(); ++e) {
    json logs = json::array();
    for (const auto& [name, value] : history.logs()[e].items()) logs.push_back({name, number(value)});
    out.push_back({{"logs", logs}, {"memory", write_fields(history.memory()[e])}});
  }
  return out;
}

// Each callback's type and state; its tensors join `tensors` as callback.<i>.<name>.
json callbacks_json(const std::vector<Callback*>& callbacks, serialization::NamedTensors& tensors) {
  json out = json::array();
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    const auto s = callbacks[i]->state();
    json entry{{"type", callback_type(*callbacks[i])}};
    if (s) {
      entry["text"] = s->text;
      json names = json::array();
      for (const auto& [name, t] : s->tensors) {
        tensors.emplace_back(fmt::format("callback.{}.{}", i, name), t);
        names.push_back(name);
      }
      entry["tensors"] = names;
    }
    out.push_back(entry);
  }
  return out;
}

// A held-back update's tensor: "pending.3.prediction" for a model of one output, else
// "pending.3.prediction.1" for output 1.
std::string pending_name(std::size_t update, std::size_t output, std::size_t outputs, const char* what) {
  return outputs == 1 ? fmt::format("pending.{}.{}", update, what) : fmt::format("pending.{}.{}.{}", update, what, output);
}

}  // namespace

std::string rank_state(const RunParts& parts) { return own_state(parts).dump(); }

void write_training_checkpoint(const std::string& path, const RunParts& parts, const RunSignature& signature,
                               const std::vector<Callback*>& callbacks, const std::vector<std::string>& rank_states,
                               const std::string& shards) {
  serialization::NamedTensors tensors;
  json state;
  json run = json::object();
  for (const auto& [name, value] : signature) run[name] = value;
  state["run"] = run;

  for (const auto& [name, t] : parts.model.named_state()) tensors.emplace_back("model." + name, t);
  for (const auto& [name, p] : parts.model.named_parameters())
    if (p.grad().defined()) tensors.emplace_back("grad." + name, p.grad());
  optim::OptimizerState optimizer = parts.optimizer.state();
  if (!shards.empty()) optimizer = {.counters = whole_optimizer_counters(optimizer)};  // the pieces' are in the shards
  for (const auto& [name, t] : optimizer.tensors)
    if (t.defined()) tensors.emplace_back("optimizer." + name, t);
  state["optimizer"] = optimizer.counters;
  if (!shards.empty()) state["optimizer_shards"] = json::parse(shards);
  if (parts.scaler != nullptr) state["scaler"] = write_fields(parts.scaler->state());
  state["schedule"] = parts.schedule.state();

  const RunState& r = parts.run;
  state.update(position_json(parts));
  state.update(own_state(parts));
  state["processes"] = std::max<std::size_t>(1, rank_states.size());
  if (!rank_states.empty()) {
    json ranks = json::array();
    for (const std::string& text : rank_states) ranks.push_back(json::parse(text));
    state["ranks"] = ranks;
  }
  json pending = json::array(), pending_units = json::array(), pending_samples = json::array();
  for (std::size_t i = 0; i < r.pending.size(); ++i) {
    const PendingUpdate& u = r.pending[i];
    const std::size_t outputs = u.predictions.size();
    json losses = json::array();
    for (std::size_t o = 0; o < outputs; ++o) {
      tensors.emplace_back(pending_name(i, o, outputs, "prediction"), u.predictions[o]);
      tensors.emplace_back(pending_name(i, o, outputs, "targets"), u.targets[o]);
      losses.push_back(number(u.losses[o]));
    }
    // One output's as they always were: a number each; several outputs' a list each.
    pending.push_back(outputs == 1 ? losses[0] : losses);
    pending_units.push_back(outputs == 1 ? json(u.units[0]) : json(u.units));
    pending_samples.push_back(u.samples);
  }
  state["pending_losses"] = pending;
  state["pending_units"] = pending_units;
  state["pending_samples"] = pending_samples;
  state["history"] = history_json(r.history);
  state["callbacks"] = callbacks_json(callbacks, tensors);
  serialization::save_checkpoint(path, tensors, state.dump());
}

struct TrainingCheckpoint::Data {
  serialization::NamedTensors tensors;
  json state;
};

TrainingCheckpoint TrainingCheckpoint::read(const std::string& path) {
  serialization::CheckpointFile file = serialization::load_checkpoint(path);
  auto data = std::make_shared<Data>();
  data->tensors = std::move(file.tensors);
  try {
    data->state = parse_json(file.state, "its state");
  } catch (const JsonError& e) {
    throw IoError(fmt::format("checkpoint {}: {}; it was not loaded", path, e.what()));
  }
  if (!data->state.is_object())
    throw IoError(fmt::format("checkpoint {}: its state is not a JSON object; it was not loaded", path));
  if (data->state.contains("optimizer_shards")) check_shard_files(path, data->state["optimizer_shards"].dump());
  TrainingCheckpoint c;
  c.path_ = path;
  c.data_ = std::move(data);
  return c;
}

namespace {

// Runs `f`, turning a missing or mistyped entry of the state into an error naming the file.
template <class F>
decltype(auto) reading(const std::string& path, F&& f) {
  try {
    return f();
  } catch (const json::exception& e) {
    throw IoError(fmt::format("checkpoint {}: its state is incomplete or mistyped ({}); it was not loaded", path, e.what()));
  } catch (const ValueError& e) {
    throw IoError(fmt::format("checkpoint {}: {}; it was not loaded", path, e.what()));
  }
}

}  // namespace

void TrainingCheckpoint::check_signature(const RunSignature& now) const {
  const json& run = reading(path_, [&]() -> const json& { return data_->state.at("run"); });
  std::vector<std::string> differences;
  for (const auto& [name, value] : now) {
    const std::string saved = run.contains(name) && run[name].is_string() ? run[name].get<std::string>() : "(not saved)";
    if (saved != value) differences.push_back(fmt::format("{}: {} in the checkpoint, {} now", name, saved, value));
  }
  if (differences.empty()) return;
  std::string all;
  for (const auto& d : differences) all += "\n  " + d;
  throw ValueError(fmt::format("checkpoint {} was written by a run with other settings, so continuing from it would not "
                               "repeat that run ({} difference{}); resume with the same model, data and options, or "
                               "take only its weights with load_weights:{}",
                               path_, differences.size(), differences.size() == 1 ? "" : "s", all));
}

std::int64_t TrainingCheckpoint::batch_size() const {
  const auto b = reading(path_, [&] { return read_fields<Settings>(data_->state).batch_size; });
  if (b < 1) throw IoError(fmt::format("checkpoint {}: its micro-batch is {}; it was not loaded", path_, b));
  return b;
}

int TrainingCheckpoint::accumulation_factor() const {
  const int f = reading(path_, [&] { return read_fields<Settings>(data_->state).accumulation_factor; });
  if (f < 1 || (f & (f - 1)) != 0)
    throw IoError(fmt::format("checkpoint {}: its accumulation factor is {}, not a power of 2; it was not loaded", path_, f));
  return f;
}

std::uint64_t TrainingCheckpoint::loader_seed() const {
  return reading(path_, [&] { return read_fields<Settings>(data_->state).loader_seed; });
}

namespace {

// A checkpoint's state parsed into values, before anything of the run changes.
struct ParsedState {
  optim::OptimizerState optimizer;
  std::optional<GradScaler::State> scaler;
  std::string schedule;
  Generators generators;
  Position position;
  double lr_factor = 1.0;
  metrics::MeanLoss epoch_loss;
  std::vector<Metric> metrics;
  std::vector<PendingUpdate> pending;
  History history;
};

// This process's part of the checkpoint's own_state: with as many processes as wrote it, the one
// its rank wrote. With another number, process 0 takes the sum of every writer's running counts and
// the others start from zero (so the counts summed over the processes at the epoch's end are the
// writers'), and each process takes the generators of writer `rank` modulo their number.
json share_of(const json& s, int rank, int processes) {
  std::vector<const json*> writers;
  if (s.contains("ranks"))
    for (const json& w : s.at("ranks")) writers.push_back(&w);
  else
    writers.push_back(&s);
  const int n = static_cast<int>(writers.size());
  ACCRUE_CHECK(n >= 1 && n == json_integer<int>(s.value("processes", json(1)), "processes"),
               "it holds the state of {} processes but says {} wrote it", n, json_excerpt(s.value("processes", json(1))));
  if (n == processes) return *writers[static_cast<std::size_t>(rank)];
  // The writers' counts at `of` summed for process 0, zero for the others.
  const auto counts = [&](auto of) {
    std::vector<double> sum = of(*writers[0]).template get<std::vector<double>>();
    for (std::size_t w = 1; w < writers.size(); ++w) {
      const std::vector<double> more = of(*writers[w]).template get<std::vector<double>>();
      ACCRUE_CHECK(more.size() == sum.size(), "its processes' running counts differ in length");
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += more[i];
    }
    if (rank != 0) std::fill(sum.begin(), sum.end(), 0.0);
    return sum;
  };
  json own = *writers[static_cast<std::size_t>(rank % n)];
  own["epoch_loss"] = counts([](const json& w) -> const json& { return w.at("epoch_loss"); });
  for (std::size_t m = 0; m < own.at("metrics").size(); ++m)
    if (!own["metrics"][m].at("state").is_null())
      own["metrics"][m]["state"] = counts([m](const json& w) -> const json& { return w.at("metrics").at(m).at("state"); });
  return own;
}

// The optimizer's counters, the loss scaler and the schedule.
void parse_counters(const json& s, ParsedState& v) {
  const json& counters = s.at("optimizer");
  ACCRUE_CHECK(counters.is_object(), "its optimizer counters are not an object");
  for (auto it = counters.begin(); it != counters.end(); ++it)
    v.optimizer.counters[it.key()] = json_integer<std::int64_t>(*it, "an optimizer counter");
  if (s.contains("scaler") && !s["scaler"].is_null()) {
    v.scaler = read_fields<GradScaler::State>(s["scaler"]);
    ACCRUE_CHECK(std::isfinite(v.scaler->scale) && v.scaler->scale > 0 && v.scaler->growth_tracker >= 0 &&
                     v.scaler->skipped_steps >= 0,
                 "its loss scaler state (scale {}, growth tracker {}) is not valid", v.scaler->scale,
                 v.scaler->growth_tracker);
  }
  v.schedule = s.at("schedule").get<std::string>();
}

// Where the run stood, checked against the run's plan.
void parse_position(const json& s, const StepPlan& plan, ParsedState& v) {
  const Position p = v.position = read_fields<Position>(s.at("position"));
  v.lr_factor = read_fields<Settings>(s).lr_factor;
  ACCRUE_CHECK(std::isfinite(v.lr_factor) && v.lr_factor >= 0.0, "its learning-rate factor {} is not finite and >= 0",
               v.lr_factor);
  ACCRUE_CHECK(p.micro_batches >= 0 && p.optimizer_steps >= 0, "its counts of micro-batches ({}) and steps ({}) are negative",
               p.micro_batches, p.optimizer_steps);
  ACCRUE_CHECK(p.epoch >= 0 && p.epoch <= plan.spec().epochs, "its epoch {} is outside the run's {} epochs", p.epoch + 1,
               plan.spec().epochs);
  if (p.epoch < plan.spec().epochs) {
    const std::size_t slots = plan.epoch_slots(p.epoch).size();
    // next_slot == slots: every micro-batch trained, the epoch's end to come (stopped in validation).
    ACCRUE_CHECK(p.next_slot <= slots, "its next micro-batch {} is past the {} of epoch {}", p.next_slot + 1, slots,
                 p.epoch + 1);
  }
}

// The epoch's running loss and metrics (the model's, in its order), and the history so far.
void parse_metrics(const json& s, const json& own, const std::vector<Metric>& model_metrics, ParsedState& v) {
  v.epoch_loss.load_state(own.at("epoch_loss").get<std::vector<double>>());
  const json& metrics = own.at("metrics");
  ACCRUE_CHECK(metrics.size() == model_metrics.size(), "it has {} metrics, the model {}", metrics.size(),
               model_metrics.size());
  v.metrics = model_metrics;
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const std::string name = metrics[i].at("name").get<std::string>();
    ACCRUE_CHECK(name == v.metrics[i].name(), "metric {} is '{}' in the checkpoint and '{}' in the model", i + 1, name,
                 v.metrics[i].name());
    const json& ms = metrics[i].at("state");
    if (ms.is_null()) {
      v.metrics[i].reset();
      if (v.position.next_slot > 0)
        log::warning("metric '{}' keeps no state (no state() member), so its value for epoch {} covers only the "
                     "micro-batches after the resume",
                     name, v.position.epoch + 1);
    } else {
      v.metrics[i].load_state(ms.get<std::vector<double>>());
    }
  }
  for (const json& e : s.at("history")) {
    Logs logs;
    for (const json& item : e.at("logs")) logs.set(item.at(0).get<std::string>(), to_double(item.at(1)));
    v.history.append(std::move(logs), read_fields<MemoryStats>(e.at("memory")));
  }
}

// The tensors besides the model's and the gradients: the optimizer's, the held-back metric
// updates' and the callbacks'; each one taken is claimed in `found`.
void parse_tensors(const json& s, const serialization::NamedTensors& tensors, Device device,
                   serialization::TensorMatch& found, ParsedState& v) {
  for (const auto& [name, t] : tensors)
    if (name.starts_with("optimizer.")) {
      v.optimizer.tensors.emplace_back(name.substr(10), t);
      found.claimed.push_back(name);
    }
  const json& losses = s.at("pending_losses");
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const bool several = losses[i].is_array();
    const std::size_t outputs = several ? losses[i].size() : 1;
    PendingUpdate u;
    for (std::size_t o = 0; o < outputs; ++o) {
      const std::string p_name = pending_name(i, o, outputs, "prediction"), t_name = pending_name(i, o, outputs, "targets");
      const Tensor* p = serialization::find_tensor(tensors, p_name);
      const Tensor* t = serialization::find_tensor(tensors, t_name);
      ACCRUE_CHECK(p != nullptr && t != nullptr, "pending metric update {} has no prediction or targets", i);
      u.predictions.push_back(p->to(device));
      u.targets.push_back(t->to(device));
      u.losses.push_back(to_double(several ? losses[i][o] : losses[i]));
      // Checkpoints from before losses per token count each held-back sample once.
      const json* units = s.contains("pending_units") ? &s.at("pending_units").at(i) : nullptr;
      u.units.push_back(units == nullptr ? t->size(0) : (several ? units->at(o) : *units).get<std::int64_t>());
      found.claimed.push_back(p_name);
      found.claimed.push_back(t_name);
    }
    u.samples = s.contains("pending_samples") ? s.at("pending_samples").at(i).get<std::int64_t>() : u.targets[0].size(0);
    v.pending.push_back(std::move(u));
  }
  const json& cbs = s.at("callbacks");
  for (std::size_t i = 0; i < cbs.size(); ++i)
    if (cbs[i].contains("tensors"))
      for (const json& n : cbs[i]["tensors"]) found.claimed.push_back(fmt::format("callback.{}.{}", i, n.get<std::string>()));
}

// The optimizer state this process takes: the checkpoint's own (`saved`), or, when the checkpoint
// or the run is sharded, the saved pieces' cut into this process's.
optim::OptimizerState optimizer_state_for(const std::string& path, const json& s, optim::OptimizerState saved,
                                          const RunParts& parts) {
  const std::string shards = s.contains("optimizer_shards") ? s["optimizer_shards"].dump() : std::string{};
  if (shards.empty() && (parts.placement == nullptr || !parts.placement->sharded())) return saved;
  ACCRUE_CHECK(parts.placement != nullptr, "checkpoint {} holds its optimizer state in shards; fit restores it", path);
  return resharded_state(path, shards, saved, *parts.placement);
}

}  // namespace

int TrainingCheckpoint::processes() const {
  const int n = reading(path_, [&] { return json_integer<int>(data_->state.value("processes", json(1)), "processes"); });
  if (n < 1) throw IoError(fmt::format("checkpoint {}: it says {} processes wrote it; it was not loaded", path_, n));
  return n;
}

void TrainingCheckpoint::restore(RunParts& parts, int rank, int processes) const {
  const json& s = data_->state;
  const serialization::NamedTensors& tensors = data_->tensors;
  // What the tensors must be: the model's parameters and buffers, the gradients of an open
  // window (absent before a window's first backward), the optimizer's state.
  serialization::TensorMatch found;
  const auto state_copies = found.match(parts.model.named_state(), tensors, "model.", true, "the checkpoint");
  auto grads = found.match(parts.model.named_parameters(), tensors, "grad.", false, "the checkpoint");
  ParsedState v;
  reading(path_, [&] {
    const json own = share_of(s, rank, processes);
    parse_counters(s, v);
    v.generators = read_fields<Generators>(own.at("generators"));
    parse_position(s, *parts.context.plan, v);
    parse_metrics(s, own, parts.metrics, v);
    parse_tensors(s, tensors, parts.model.device(), found, v);
  });
  if ((parts.scaler != nullptr) != v.scaler.has_value())
    found.problems.push_back(v.scaler ? "the checkpoint has a loss scaler's state; this run scales no loss"
                                      : "this run scales its loss (float16), the checkpoint has no scaler state");
  found.add_unexpected(tensors);
  if (!found.problems.empty())
    throw ValueError(fmt::format("checkpoint {} does not fit model '{}' ({} problem{}); nothing was loaded:{}", path_,
                                 parts.model.name(), found.problems.size(), found.problems.size() == 1 ? "" : "s",
                                 found.problem_lines()));
  LrSchedule schedule = parts.schedule;
  reading(path_, [&] { schedule.load_state(v.schedule); });
  v.optimizer = optimizer_state_for(path_, s, std::move(v.optimizer), parts);
  // The optimizer checks its state before taking it; it is the last thing that can refuse.
  parts.optimizer.load_state(v.optimizer);

  const NoGradGuard no_grad;
  for (auto [t, saved] : state_copies) t.copy_(saved);
  // An open window's gradients (a one-process checkpoint) go to process 0 alone: the reduction
  // at the window's close sums them over the processes.
  if (rank != 0) grads.clear();
  for (auto [p, saved] : grads) {
    Tensor g = Tensor::empty(p.shape(), {.device = p.device(), .category = MemoryCategory::gradients});
    g.copy_(saved);
    p.set_grad(g);
  }
  if (parts.scaler != nullptr) parts.scaler->load_state(*v.scaler);
  parts.schedule = std::move(schedule);
  parts.model.generator().set_state(v.generators.model[0], v.generators.model[1]);
  default_generator().set_state(v.generators.fallback[0], v.generators.fallback[1]);
  RunState& r = parts.run;
  r.epoch = v.position.epoch;
  r.next_slot = v.position.next_slot;
  r.micro_batches = v.position.micro_batches;
  r.window_poisoned = v.position.window_poisoned;
  r.epoch_loss = v.epoch_loss;
  if (rank == 0) r.pending = std::move(v.pending);
  r.history = std::move(v.history);
  parts.metrics = std::move(v.metrics);
  parts.context.optimizer_steps = v.position.optimizer_steps;
  parts.context.lr_factor = v.lr_factor;
  parts.context.stop_requested = v.position.stop_requested;
}

void TrainingCheckpoint::restore_callbacks(const std::vector<Callback*>& callbacks) const {
  const json& saved = reading(path_, [&]() -> const json& { return data_->state.at("callbacks"); });
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    if (i >= saved.size()) {
      log::warning("checkpoint {} has no state for callback {} ({}); it starts afresh", path_, i + 1,
                   callback_type(*callbacks[i]));
      continue;
    }
    const json& entry = saved[i];
    const std::string type = reading(path_, [&] { return entry.at("type").get<std::string>(); });
    if (type != callback_type(*callbacks[i])) {
      log::warning("callback {} is a {} but the checkpoint saved a {} there; it starts afresh", i + 1,
                   callback_type(*callbacks[i]), type);
      continue;
    }
    if (!entry.contains("text")) continue;
    CallbackState state;
    reading(path_, [&] {
      state.text = entry.at("text").get<std::string>();
      for (const json& n : entry.at("tensors")) {
        const std::string name = n.get<std::string>();
        const Tensor* t = serialization::find_tensor(data_->tensors, fmt::format("callback.{}.{}", i, name));
        ACCRUE_CHECK(t != nullptr, "callback {}'s tensor '{}' is missing", i + 1, name);
        state.tensors.emplace_back(name, *t);
      }
    });
    callbacks[i]->load_state(state);
  }
}

}  // namespace accrue::detail
