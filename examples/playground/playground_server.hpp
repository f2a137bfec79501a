#pragma once
// The playground's server: one page and a small HTTP API over real training of the tutorial's
// FashionMNIST MLP or CNN. Each run trains in a process of its own (run.hpp), so that runs side by
// side keep their own memory accounting, cap, random generator and threads; the server relays the
// events that process prints to every page that watches.
//
// Alone (the default) the server has one workspace that every page shares: one run at a time, and
// any page may stop it. As a classroom (PlaygroundOptions::classroom) each browser opens a
// workspace of its own, with a short name shown on its page and a key only it holds; at most
// max_runs runs train at once and the others wait in a queue; the teacher's page sees every
// workspace and can pause, resume or stop all runs.
//
//   GET  /                  the page                         GET  /teacher?token=T  the teacher's page
//   POST /api/workspaces    classroom: 201 {"name", "key"}; 503 past max_workspaces
//   GET  /api/status        the workspace's run, its place in the queue, the classroom's runs
//   POST /api/plan          settings -> the memory plan by category against the cap, and the advice an
//                           out-of-memory error would give when it does not fit; answered while runs go
//   POST /api/runs          settings -> 201 {"run", "queued"}; 400 {"error"} for bad settings; 409
//                           while the workspace's run is queued or going
//   GET  /api/events        Server-Sent Events: the workspace's current run from its start, then its
//                           next runs', its place in the queue and the teacher's pauses
//   POST /api/stop          ends the workspace's run after its current micro-batch (a queued one
//                           leaves the queue) and answers once it has ended; 409 when none is going
//   GET  /api/teacher/events?token=T   every open workspace and its latest run: start, steps, end
//   POST /api/teacher/{pause,resume,stop}?token=T   all runs; stop&workspace=NAME: that one's
// In a classroom every /api/ route but /api/workspaces and /api/plan names its workspace with
// ?w=KEY; 404 for a key the server does not know.
//
// A classroom's limits, so that one client cannot fill the room: workspaces and event streams per
// client address (429 past them), the teacher's streams apart from the students', workspaces that
// close after a time without a page, a request or a run, and runs that stop at the teacher's
// length.
//
// Settings are a JSON object; keys left out keep their defaults (settings.hpp). What the server
// refuses before a request reaches these routes (slow or oversized requests, other machines, pages
// of other sites) is in http_server.hpp.

#include <accrue/accrue.hpp>
#include <accrue/framework/core/non_copyable.hpp>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "http_server.hpp"
#include "settings.hpp"

namespace playground {

/// The events of one workspace's current run (or of the whole classroom, never restarted), kept
/// from its start so that a page opened late sees all of it. The classroom's are tagged by
/// workspace, and forget() drops a workspace's (at its next run, or when it closes): the teacher's
/// log holds each open workspace's latest run, not every step of the server's life.
class EventLog {
 public:
  struct Cursor {
    std::int64_t run = -1;
    std::uint64_t next = 0;  // the sequence number of the next event to take
  };
  void begin_run(std::int64_t run);
  void publish(std::string event, std::string tag = {});
  /// Drops the events tagged `tag`; pages that took them keep them, pages that come later never see them.
  void forget(const std::string& tag);
  /// The events after `cursor` (all of a newer run's); advances it. Never blocks.
  std::vector<std::string> take(Cursor& cursor);
  std::size_t size() const;
  /// Calls `wake` after every change, until unsubscribe(id) returns.
  std::uint64_t subscribe(std::function<void()> wake);
  void unsubscribe(std::uint64_t id);

 private:
  void changed();  // with mutex_ held: the wake-ups run under it, so none comes after unsubscribe
  struct Event {
    std::uint64_t sequence;
    std::string tag, text;
  };
  mutable std::mutex mutex_;
  std::int64_t run_ = 0;
  std::uint64_t next_sequence_ = 0;
  std::vector<Event> events_;  // in sequence order
  std::vector<std::pair<std::uint64_t, std::function<void()>>> subscribers_;
  std::uint64_t next_id_ = 0;
};

struct PlaygroundOptions {
  /// The command that trains one run, without its last arguments: the server appends
  /// "--worker" and the run's number, writes the settings to its stdin and reads events from its
  /// stdout (run.hpp's run_worker). Its training data has `training_samples` samples.
  std::vector<std::string> worker;
  std::int64_t training_samples = 0;
  /// Where plans are computed (and what the worker trains on).
  accrue::Device device = accrue::Device::cpu();
  bool classroom = false;
  /// Runs training at once; more wait in a queue, first come first served.
  int max_runs = 1;
  /// ACCRUE_NUM_THREADS of each run; 0: each run's default (all cores).
  int threads_per_run = 0;
  int max_workspaces = 200;
  /// Classroom: workspaces one client address may open, and event streams it may hold (four per
  /// workspace: a few tabs); 0: no limit. Behind a NAT, where the room shares one address, raise it.
  int per_address = 4;
  /// Classroom: a workspace with no run, no page watching and no request for this long closes (its
  /// key then gets 404 and its page opens a new one); 0: never.
  std::chrono::milliseconds workspace_idle{std::chrono::minutes{60}};
  /// Classroom: a run training for longer stops, saying why (the teacher's bound; 0: none).
  std::chrono::milliseconds max_run{std::chrono::minutes{30}};
  /// Classroom: the token of the teacher's page and API.
  std::string teacher_token;
};

class Playground : accrue::NonCopyable {
 public:
  explicit Playground(PlaygroundOptions options);
  /// Stops every run and waits for their processes.
  ~Playground();

  /// Adds the pages and the API to `server`.
  void serve(http::Server& server, std::string page, std::string teacher_page = {});

  /// The memory plan of `settings` against its cap (POST /api/plan).
  json plan(const Settings& settings) const;
  /// Processes training now, and those not yet reaped (for the load test).
  int runs_alive() const { return processes_.load(); }
  /// The shared workspace's status, or of the classroom's workspace with this key.
  json status(const std::string& key = {}) const;

  static constexpr int max_streams = 256, max_teacher_streams = 16;

  struct Workspace;  // what playground_server.cpp and workspaces.cpp keep of one

 private:
  class Watcher;
  class TeacherWatcher;
  using WorkspacePtr = std::shared_ptr<Workspace>;
  /// The workspace of `key`, seen now (a request keeps it open); null for a key not known.
  WorkspacePtr find(const std::string& key) const;
  /// A new workspace for a client at `address`, or the reason there is none (HTTP status, message).
  std::variant<WorkspacePtr, std::pair<int, std::string>> open_workspace(const std::string& address);
  std::optional<std::int64_t> start(Workspace& w, const Settings& settings);
  bool stop(Workspace& w);
  bool stop_named(const std::string& name);
  /// Classroom: once a second, stops runs past max_run and closes idle workspaces.
  void keep_house();
  void close_idle_workspaces();
  void stop_long_runs();
  void pause_all(bool paused);
  void stop_all();
  json status_locked(const Workspace& w) const;
  void dispatch();
  void launch(Workspace& w);
  void relay(Workspace& w, std::int64_t run);
  void publish_queue();
  void finished(Workspace& w, std::int64_t run, const std::optional<std::string>& end, std::string_view why);
  void dequeue(Workspace& w);
  void end_for_process(Workspace& w, std::int64_t run, std::string_view outcome, std::string message);
  void wait_for_ends(std::unique_lock<std::mutex>& lock, const std::function<bool()>& over);

  http::Response plan_request(const http::Request& request) const;
  http::Response start_request(const http::Request& request);
  http::Response stop_request(const http::Request& request);
  http::Response teacher_request(const http::Request& request, std::string_view action);

  PlaygroundOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable ended_;  // a run ended (stop waits for it)
  std::map<std::string, WorkspacePtr> workspaces_;  // by key
  std::deque<Workspace*> queue_;
  std::vector<std::thread> relays_done_;  // relays that have returned, to join
  EventLog classroom_;                    // the teacher's events
  std::int64_t runs_ = 0;
  int running_ = 0;
  bool paused_ = false, closing_ = false;
  std::atomic<int> processes_{0}, streams_{0};
  std::map<std::string, int> streams_by_address_;  // students' streams, under mutex_
  int teacher_streams_ = 0;                         // under mutex_
  std::condition_variable housekeeping_wake_;
  std::thread housekeeping_;
};

}  // namespace playground
