#include "playground_server.hpp"

#include <algorithm>
#include <cmath>

#include "run.hpp"
#include "workspace.hpp"

namespace playground {

using namespace accrue;

// ---- EventLog ----

void EventLog::begin_run(std::int64_t run) {
  const std::lock_guard lock{mutex_};
  run_ = run;
  events_.clear();
  changed();
}

void EventLog::publish(std::string event, std::string tag) {
  const std::lock_guard lock{mutex_};
  events_.push_back({next_sequence_++, std::move(tag), std::move(event)});
  changed();
}

void EventLog::forget(const std::string& tag) {
  const std::lock_guard lock{mutex_};
  std::erase_if(events_, [&](const Event& e) { return e.tag == tag; });
}

std::vector<std::string> EventLog::take(Cursor& cursor) {
  const std::lock_guard lock{mutex_};
  if (cursor.run != run_) cursor = {run_, 0};
  const auto first = std::lower_bound(events_.begin(), events_.end(), cursor.next,
                                      [](const Event& e, std::uint64_t next) { return e.sequence < next; });
  std::vector<std::string> out;
  for (auto it = first; it != events_.end(); ++it) out.push_back(it->text);
  cursor.next = next_sequence_;
  return out;
}

std::size_t EventLog::size() const {
  const std::lock_guard lock{mutex_};
  return events_.size();
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

// ---- Status ----

json Playground::plan(const Settings& settings) const { return playground::plan(settings, options_.device); }

json Playground::status(const std::string& key) const {
  const WorkspacePtr w = find(key);
  if (w == nullptr) return nullptr;
  const std::lock_guard lock{mutex_};
  return status_locked(*w);
}

json Playground::status_locked(const Workspace& w) const {
  const auto place = std::find(queue_.begin(), queue_.end(), &w);
  return {{"workspace", w.name},
          {"running", w.state != Workspace::State::idle},
          {"queued", place == queue_.end() ? 0 : place - queue_.begin() + 1},
          {"run", w.run},
          {"settings", w.run > 0 ? w.settings.to_json() : json(nullptr)},
          {"micro_batches", w.micro_batches},
          {"optimizer_steps", w.optimizer_steps},
          {"loss", std::isfinite(w.loss) ? json(w.loss) : json(nullptr)},
          {"outcome", w.outcome},
          {"paused", paused_},
          {"classroom", options_.classroom},
          {"training", running_},
          {"waiting", queue_.size()},
          {"max_runs", options_.max_runs},
          {"threads_per_run", options_.threads_per_run},
          {"memory_live", memory_stats(options_.device).live_total},
          {"processes", processes_.load()},
          {"watching", streams_.load()}};
}

// ---- HTTP ----

namespace {

http::Response answer(int status, const json& body) {
  return {status, body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"};
}

http::Response no_workspace(bool classroom) {
  return http::error(404, classroom ? "no such workspace here: open the playground's page for one (its address "
                                      "ends in ?w= and the key the page was given)"
                                    : "this playground is not a classroom: leave out ?w=");
}

}  // namespace

// A page watching its workspace: a hello with the status, then every event of its runs as they
// come. While one watches, the workspace stays open.
class Playground::Watcher final : public http::EventFeed {
 public:
  Watcher(Playground& owner, WorkspacePtr w, std::string address, std::function<void()> wake)
      : owner_(owner), keep_(std::move(w)), w_(*keep_), address_(std::move(address)), id_(w_.events.subscribe(std::move(wake))) {}
  ~Watcher() override {
    w_.events.unsubscribe(id_);
    --owner_.streams_;
    const std::lock_guard lock{owner_.mutex_};
    --w_.watchers;
    w_.last_seen = std::chrono::steady_clock::now();
    if (--owner_.streams_by_address_[address_] == 0) owner_.streams_by_address_.erase(address_);
  }
  std::string take() override {
    std::string frames;
    if (!greeted_) {
      greeted_ = true;
      json hello = owner_.status(w_.key);
      hello["type"] = "hello";
      frames += "data: " + hello.dump() + "\n\n";
    }
    for (const std::string& e : w_.events.take(cursor_)) frames += "data: " + e + "\n\n";
    return frames;
  }

 private:
  Playground& owner_;
  WorkspacePtr keep_;
  Workspace& w_;
  std::string address_;
  std::uint64_t id_;
  EventLog::Cursor cursor_;
  bool greeted_ = false;
};

// The teacher's page watching: every workspace's run starts, optimizer steps and ends, from the
// server's start.
class Playground::TeacherWatcher final : public http::EventFeed {
 public:
  TeacherWatcher(Playground& owner, std::function<void()> wake)
      : owner_(owner), id_(owner.classroom_.subscribe(std::move(wake))) {}
  ~TeacherWatcher() override {
    owner_.classroom_.unsubscribe(id_);
    const std::lock_guard lock{owner_.mutex_};
    --owner_.teacher_streams_;
  }
  std::string take() override {
    std::string frames;
    for (const std::string& e : owner_.classroom_.take(cursor_)) frames += "data: " + e + "\n\n";
    return frames;
  }

 private:
  Playground& owner_;
  std::uint64_t id_;
  EventLog::Cursor cursor_;
};

void Playground::serve(http::Server& server, std::string page, std::string teacher_page) {
  server.route("GET", "/", [page = std::move(page)](const http::Request&) {
    return http::Response{200, page, "text/html; charset=utf-8"};
  });
  server.route("GET", "/api/status", [this](const http::Request& r) {
    const json s = status(http::query_value(r.query, "w"));
    return s.is_null() ? no_workspace(options_.classroom) : answer(200, s);
  });
  // Planning builds a model, and stopping waits for the run's end: off the network threads.
  server.route("POST", "/api/plan", [this](const http::Request& r) { return plan_request(r); }, true);
  server.route("POST", "/api/runs", [this](const http::Request& r) { return start_request(r); }, true);
  server.route("POST", "/api/stop", [this](const http::Request& r) { return stop_request(r); }, true);
  server.route("POST", "/api/workspaces", [this](const http::Request& r) {
    if (!options_.classroom) return http::error(404, "this playground is not a classroom (start it with --classroom)");
    auto opened = open_workspace(r.remote);
    if (const auto* refused = std::get_if<std::pair<int, std::string>>(&opened))
      return http::error(refused->first, refused->second);
    const WorkspacePtr& w = std::get<WorkspacePtr>(opened);
    return answer(201, json{{"name", w->name}, {"key", w->key}});
  });
  server.route_stream("/api/events", [this](const http::Request& r, std::function<void()> wake)
                                         -> std::variant<http::Response, std::unique_ptr<http::EventFeed>> {
    WorkspacePtr w = find(http::query_value(r.query, "w"));
    if (w == nullptr) return no_workspace(options_.classroom);
    {
      const std::lock_guard lock{mutex_};
      const int per_address = 4 * options_.per_address;
      if (options_.classroom && per_address > 0 && streams_by_address_[r.remote] >= per_address) {
        if (streams_by_address_[r.remote] == 0) streams_by_address_.erase(r.remote);
        return http::error(429, fmt::format("{} event streams from your address already; close a page", per_address));
      }
      if (++streams_ > max_streams) {
        --streams_;
        return http::error(503, fmt::format("{} pages are watching already; close one", max_streams));
      }
      ++streams_by_address_[r.remote];
      ++w->watchers;
    }
    return std::make_unique<Watcher>(*this, std::move(w), r.remote, std::move(wake));
  });
  if (!options_.classroom) return;
  const auto teacher = [this](const http::Request& r) {
    return !options_.teacher_token.empty() && http::query_value(r.query, "token") == options_.teacher_token;
  };
  server.route("GET", "/teacher", [teacher, page = std::move(teacher_page)](const http::Request& r) {
    if (!teacher(r)) return http::error(403, "the teacher's page needs the token the server printed at its start");
    return http::Response{200, page, "text/html; charset=utf-8"};
  });
  for (const std::string_view action : {"pause", "resume", "stop"})
    server.route("POST", fmt::format("/api/teacher/{}", action), [this, teacher, action](const http::Request& r) {
      if (!teacher(r)) return http::error(403, "not the teacher's token");
      return teacher_request(r, action);
    }, true);
  // The teacher's streams have a budget of their own: students' pages cannot take it.
  server.route_stream("/api/teacher/events", [this, teacher](const http::Request& r, std::function<void()> wake)
                                                 -> std::variant<http::Response, std::unique_ptr<http::EventFeed>> {
    if (!teacher(r)) return http::error(403, "not the teacher's token");
    const std::lock_guard lock{mutex_};
    if (teacher_streams_ >= max_teacher_streams)
      return http::error(503, fmt::format("{} teacher's pages are open already; close one", max_teacher_streams));
    ++teacher_streams_;
    return std::make_unique<TeacherWatcher>(*this, std::move(wake));
  });
}

http::Response Playground::plan_request(const http::Request& request) const {
  try {
    return answer(200, plan(parse_settings(request.body, options_.training_samples)));
  } catch (const SettingsError& e) {
    return http::error(400, e.what());
  }
}

http::Response Playground::start_request(const http::Request& request) {
  const WorkspacePtr w = find(http::query_value(request.query, "w"));
  if (w == nullptr) return no_workspace(options_.classroom);
  try {
    const Settings s = parse_settings(request.body, options_.training_samples);
    if (const std::optional<std::int64_t> run = start(*w, s)) {
      const json now = status(w->key);
      return answer(201, json{{"run", *run}, {"settings", s.to_json()}, {"queued", now["queued"]}});
    }
    return answer(409, json{{"error", options_.classroom ? "your run is going or waiting: stop it first"
                                                         : "a run is going: watch it (GET /api/events) or stop it "
                                                           "(POST /api/stop) first"},
                            {"status", status(w->key)}});
  } catch (const SettingsError& e) {
    return http::error(400, e.what());
  }
}

http::Response Playground::stop_request(const http::Request& request) {
  const WorkspacePtr w = find(http::query_value(request.query, "w"));
  if (w == nullptr) return no_workspace(options_.classroom);
  const std::int64_t run = status(w->key)["run"];
  if (!stop(*w)) return http::error(409, "no run is going");
  return answer(200, json{{"stopped", run}});
}

http::Response Playground::teacher_request(const http::Request& request, std::string_view action) {
  const std::string workspace = http::query_value(request.query, "workspace");
  if (action == "stop" && !workspace.empty()) {
    if (!stop_named(workspace))
      return http::error(404, fmt::format("no workspace {} has a run going or waiting", http::printable(workspace)));
  } else if (action == "stop") {
    stop_all();
  } else {
    pause_all(action == "pause");
  }
  const std::lock_guard lock{mutex_};
  return answer(200, json{{"paused", paused_}, {"training", running_}, {"waiting", queue_.size()}});
}

}  // namespace playground
