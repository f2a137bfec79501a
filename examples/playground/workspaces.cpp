// The life of a workspace's run: queued, trained in a process of its own, relayed, ended.

#include <algorithm>
#include <chrono>
#include <random>

#include "playground_server.hpp"
#include "workspace.hpp"

namespace playground {

using namespace accrue;

namespace {

std::string random_key() {
  std::random_device device;
  std::string key;
  for (int i = 0; i < 4; ++i) key += fmt::format("{:08x}", device());
  return key;
}

// "amber-otter": short enough to say across a room.
std::string workspace_name(std::size_t index, std::mt19937& pick) {
  static constexpr std::string_view adjectives[] = {"amber", "brisk", "calm",  "dusty", "eager", "fuzzy", "gentle",
                                                    "happy", "icy",   "jolly", "keen",  "lucky", "mellow", "noble",
                                                    "olive", "proud", "quick", "rosy",  "sunny", "tidy",  "urban",
                                                    "vivid", "witty", "young"};
  static constexpr std::string_view animals[] = {"otter", "badger", "crane", "dingo", "eagle", "ferret", "gecko",
                                                 "heron", "ibis",   "jackal", "koala", "lemur", "marten", "newt",
                                                 "okapi", "panda",  "quail", "raven", "stoat", "tapir", "urchin",
                                                 "viper", "walrus", "yak"};
  const std::string name = fmt::format("{}-{}", adjectives[pick() % std::size(adjectives)],
                                       animals[pick() % std::size(animals)]);
  return index < 400 ? name : fmt::format("{}-{}", name, index);
}

// "30 minutes", "1.5 s".
std::string format_duration(std::chrono::milliseconds d) {
  const double seconds = static_cast<double>(d.count()) / 1000.0;
  return seconds >= 60.0 ? fmt::format("{:g} minutes", seconds / 60.0) : fmt::format("{:g} s", seconds);
}

}  // namespace

Playground::Playground(PlaygroundOptions options) : options_(std::move(options)) {
  ACCRUE_CHECK(!options_.worker.empty(), "the playground needs the command that trains a run");
  ACCRUE_CHECK(options_.max_runs >= 1, "max_runs must be at least 1, got {}", options_.max_runs);
  classroom_.begin_run(1);
  if (!options_.classroom) {
    auto shared = std::make_shared<Workspace>();
    shared->name = "local";
    workspaces_.emplace("", std::move(shared));
    return;
  }
  housekeeping_ = std::thread([this] { keep_house(); });
}

Playground::~Playground() {
  {
    const std::lock_guard lock{mutex_};
    closing_ = true;
  }
  housekeeping_wake_.notify_all();
  if (housekeeping_.joinable()) housekeeping_.join();
  stop_all();
  std::vector<std::thread> relays;
  {
    const std::lock_guard lock{mutex_};
    relays.swap(relays_done_);
  }
  for (std::thread& t : relays) t.join();
}

Playground::WorkspacePtr Playground::find(const std::string& key) const {
  const std::lock_guard lock{mutex_};
  const auto it = workspaces_.find(key);
  if (it == workspaces_.end()) return nullptr;
  it->second->last_seen = Workspace::Clock::now();
  return it->second;
}

std::variant<Playground::WorkspacePtr, std::pair<int, std::string>> Playground::open_workspace(const std::string& address) {
  const std::lock_guard lock{mutex_};
  if (static_cast<int>(workspaces_.size()) >= options_.max_workspaces)
    return std::pair{503, fmt::format("the classroom is full ({} workspaces)", options_.max_workspaces)};
  const auto mine = std::ranges::count_if(workspaces_, [&](const auto& kv) { return kv.second->address == address; });
  if (options_.per_address > 0 && mine >= options_.per_address)
    return std::pair{429, fmt::format("your address has {} workspaces open already (the limit per address; a page "
                                      "keeps its own, and one left unused closes after {} minutes)",
                                      mine, std::chrono::duration_cast<std::chrono::minutes>(options_.workspace_idle).count())};
  auto w = std::make_shared<Workspace>();
  w->key = random_key();
  w->address = address;
  std::mt19937 pick{std::random_device{}()};
  const auto taken = [&](const std::string& name) {
    return std::ranges::any_of(workspaces_, [&](const auto& kv) { return kv.second->name == name; });
  };
  do w->name = workspace_name(workspaces_.size(), pick);
  while (taken(w->name));
  classroom_.forget(w->name);  // a closed workspace's of the same name
  classroom_.publish(json{{"type", "workspace"}, {"workspace", w->name}}.dump(), w->name);
  workspaces_.emplace(w->key, w);
  return w;
}

// The classroom's housekeeping thread.
void Playground::keep_house() {
  std::unique_lock lock{mutex_};
  while (!closing_) {
    housekeeping_wake_.wait_for(lock, std::chrono::milliseconds{250});
    if (closing_) return;
    stop_long_runs();
    close_idle_workspaces();
  }
}

// With mutex_ held: a run training past max_run is asked to stop, saying why, and killed when it
// has not ended 30 s later.
void Playground::stop_long_runs() {
  if (options_.max_run.count() == 0) return;
  const auto now = Workspace::Clock::now();
  for (auto& [key, w] : workspaces_) {
    if (w->state != Workspace::State::running) continue;
    if (w->stop_sent) {
      if (now - *w->stop_sent > std::chrono::seconds{30}) w->process->kill();
      continue;
    }
    if (now - w->started < options_.max_run) continue;
    w->stop_sent = now;
    w->stopping = true;
    w->events.publish(json{{"type", "notice"},
                           {"run", w->run},
                           {"message", fmt::format("This run reached the classroom's limit of {}: it stops.",
                                                   format_duration(options_.max_run))}}
                          .dump());
    w->process->send("stop");
  }
}

// With mutex_ held: workspaces with no run, no page and no request for workspace_idle close; the
// teacher's page is told, and their events leave the teacher's log.
void Playground::close_idle_workspaces() {
  if (options_.workspace_idle.count() == 0) return;
  const auto now = Workspace::Clock::now();
  for (auto it = workspaces_.begin(); it != workspaces_.end();) {
    const Workspace& w = *it->second;
    if (w.state != Workspace::State::idle || w.watchers > 0 || now - w.last_seen < options_.workspace_idle) {
      ++it;
      continue;
    }
    classroom_.forget(w.name);
    classroom_.publish(json{{"type", "closed"}, {"workspace", w.name}}.dump(), w.name);
    it = workspaces_.erase(it);
  }
}

bool Playground::stop_named(const std::string& name) {
  WorkspacePtr w;
  {
    const std::lock_guard lock{mutex_};
    for (const auto& [key, candidate] : workspaces_)
      if (candidate->name == name) w = candidate;
  }
  return w != nullptr && stop(*w);
}

std::optional<std::int64_t> Playground::start(Workspace& w, const Settings& s) {
  std::vector<std::thread> relays;
  std::optional<std::int64_t> run;
  {
    const std::lock_guard lock{mutex_};
    relays.swap(relays_done_);  // relays that have returned: joined below, outside the lock
    // A workspace closed since its request found it takes no run: nothing would stop it.
    if (!closing_ && w.state == Workspace::State::idle && workspaces_.contains(w.key)) {
      run = ++runs_;
      w.run = *run;
      w.settings = s;
      w.state = Workspace::State::queued;
      w.stopping = false;
      w.micro_batches = w.optimizer_steps = 0;
      w.loss = NAN;
      w.outcome.clear();
      w.stop_sent.reset();
      const json start{{"type", "start"}, {"run", *run}, {"workspace", w.name}, {"settings", s.to_json()}};
      w.events.begin_run(*run);
      w.events.publish(start.dump());
      // The teacher's log keeps the workspace and its latest run only.
      classroom_.forget(w.name);
      classroom_.publish(json{{"type", "workspace"}, {"workspace", w.name}}.dump(), w.name);
      classroom_.publish(start.dump(), w.name);
      queue_.push_back(&w);
      dispatch();
      publish_queue();
    }
  }
  for (std::thread& t : relays) t.join();
  return run;
}

// With mutex_ held: starts queued runs while the budget allows.
void Playground::dispatch() {
  while (!paused_ && !closing_ && running_ < options_.max_runs && !queue_.empty()) {
    Workspace& w = *queue_.front();
    queue_.pop_front();
    launch(w);
  }
}

// With mutex_ held: every queued run's place.
void Playground::publish_queue() {
  for (std::size_t i = 0; i < queue_.size(); ++i)
    queue_[i]->events.publish(json{{"type", "queue"},
                                   {"run", queue_[i]->run},
                                   {"position", i + 1},
                                   {"training", running_},
                                   {"max_runs", options_.max_runs},
                                   {"paused", paused_}}
                                  .dump());
}

// With mutex_ held.
void Playground::launch(Workspace& w) {
  std::vector<std::string> argv = options_.worker, environment;
  argv.insert(argv.end(), {"--worker", std::to_string(w.run)});
  if (options_.threads_per_run > 0) environment.push_back(fmt::format("ACCRUE_NUM_THREADS={}", options_.threads_per_run));
  try {
    w.process = std::make_unique<ChildProcess>(argv, environment);
  } catch (const std::exception& e) {
    w.state = Workspace::State::idle;
    end_for_process(w, w.run, "failed", fmt::format("the run could not start: {}", e.what()));
    ended_.notify_all();
    return;
  }
  ++processes_;
  ++running_;
  w.state = Workspace::State::running;
  w.started = Workspace::Clock::now();
  w.events.publish(json{{"type", "queue"}, {"run", w.run}, {"position", 0}, {"training", running_},
                        {"max_runs", options_.max_runs}, {"paused", paused_}}
                       .dump());
  w.process->send(w.settings.to_json().dump());
  w.relay = std::thread([this, &w, run = w.run] { relay(w, run); });
}

// The relay's thread: the process's events to the workspace's page and, summed up, to the
// teacher's: the run's start, its optimizer steps' losses (gathered, at most one event a second
// per workspace, so that a two-hour lab's log stays small) and its end.
void Playground::relay(Workspace& w, std::int64_t run) {
  using Clock = std::chrono::steady_clock;
  std::optional<std::string> end;  // the process's "end" event, told once the workspace is free
  json points = json::array();
  Clock::time_point last_steps{};
  const auto send_steps = [&] {
    if (points.empty()) return;
    classroom_.publish(json{{"type", "steps"}, {"workspace", w.name}, {"run", run}, {"optimizer_steps", w.optimizer_steps},
                            {"points", std::exchange(points, json::array())}}
                           .dump(),
                       w.name);
    last_steps = Clock::now();
  };
  while (const std::optional<std::string> line = w.process->read_line()) {
    const json e = json::parse(*line, nullptr, false);
    if (!e.is_object() || !e.contains("type") || !e["type"].is_string()) continue;  // not an event: nothing to relay
    const std::string type = e["type"].get<std::string>();
    std::optional<json> summary;
    {
      const std::lock_guard lock{mutex_};
      if (type == "micro_batch") {
        w.micro_batches = e.value("micro_batches", w.micro_batches);
        w.optimizer_steps = e.value("optimizer_steps", w.optimizer_steps);
        if (e["loss"].is_number()) w.loss = e["loss"].get<double>();
        for (const json& s : e.value("steps", json::array())) points.push_back({s["step"], s["loss"]});
      } else if (type == "end") {
        w.outcome = e.value("outcome", "failed");
        w.optimizer_steps = e.value("optimizer_steps", w.optimizer_steps);
        w.micro_batches = e.value("micro_batches", w.micro_batches);
      } else if (type == "run") {
        summary = json{{"type", "run"}, {"workspace", w.name}, {"run", run}, {"total_steps", e["total_steps"]}};
      }
    }
    if (type == "end") {
      end = *line;
      continue;
    }
    w.events.publish(*line);
    if (Clock::now() - last_steps >= std::chrono::seconds{1}) send_steps();
    if (summary) classroom_.publish(summary->dump(), w.name);
  }
  send_steps();
  const std::string why = w.process->wait();
  finished(w, run, end, why);
}

// The relay's last step: the workspace is free, then its run's end is told (a page told of the end
// may start the next run at once, while the process could still be exiting), and the next queued
// run may start.
void Playground::finished(Workspace& w, std::int64_t run, const std::optional<std::string>& end, std::string_view why) {
  const std::lock_guard lock{mutex_};
  w.process.reset();
  --processes_;
  --running_;
  w.state = Workspace::State::idle;
  if (end) {
    w.events.publish(*end);
    classroom_.publish(json{{"type", "end"}, {"workspace", w.name}, {"run", run}, {"outcome", w.outcome}}.dump(), w.name);
  } else {
    end_for_process(w, run, "failed",
                    fmt::format("the run's process ended ({}) before the run did", why.empty() ? "exit status 0" : why));
  }
  relays_done_.push_back(std::move(w.relay));
  ended_.notify_all();
  dispatch();
  publish_queue();
}

// With mutex_ held: a queued run leaves the queue, ended as stopped.
void Playground::dequeue(Workspace& w) {
  std::erase(queue_, &w);
  w.state = Workspace::State::idle;
  end_for_process(w, w.run, "stopped", "stopped while waiting in the queue");
}

// With mutex_ held: the end a run's process could not say (it never started, or died first), to
// the workspace's page and the teacher's.
void Playground::end_for_process(Workspace& w, std::int64_t run, std::string_view outcome, std::string message) {
  w.outcome = outcome;
  w.events.publish(json{{"type", "end"}, {"run", run}, {"outcome", outcome}, {"message", std::move(message)},
                        {"oom", false}, {"optimizer_steps", 0}, {"micro_batches", 0}}
                       .dump());
  classroom_.publish(json{{"type", "end"}, {"workspace", w.name}, {"run", run}, {"outcome", outcome}}.dump(), w.name);
}

// With mutex_ held by `lock`: waits for `over`; runs that do not end at their micro-batch's end
// within the limit are killed.
void Playground::wait_for_ends(std::unique_lock<std::mutex>& lock, const std::function<bool()>& over) {
  if (ended_.wait_for(lock, std::chrono::seconds{30}, over)) return;
  for (auto& [key, w] : workspaces_)
    if (w->state == Workspace::State::running && w->stopping) w->process->kill();
  ended_.wait(lock, over);
}

bool Playground::stop(Workspace& w) {
  std::unique_lock lock{mutex_};
  if (w.state == Workspace::State::queued) {
    dequeue(w);
    publish_queue();
    return true;
  }
  if (w.state != Workspace::State::running) return false;
  const std::int64_t run = w.run;
  w.stopping = true;
  w.process->send("stop");
  wait_for_ends(lock, [&] { return w.state != Workspace::State::running || w.run != run; });
  return true;
}

void Playground::pause_all(bool paused) {
  const std::lock_guard lock{mutex_};
  paused_ = paused;
  const std::string event = json{{"type", "paused"}, {"paused", paused}}.dump();
  for (auto& [key, w] : workspaces_) {
    if (w->state == Workspace::State::running) w->process->send(paused ? "pause" : "resume");
    w->events.publish(event);
  }
  classroom_.publish(event);
  dispatch();
  publish_queue();
}

void Playground::stop_all() {
  std::unique_lock lock{mutex_};
  while (!queue_.empty()) dequeue(*queue_.front());
  for (auto& [key, w] : workspaces_)
    if (w->state == Workspace::State::running) {
      w->stopping = true;
      w->process->send("stop");
    }
  wait_for_ends(lock, [&] { return running_ == 0; });
}

}  // namespace playground
