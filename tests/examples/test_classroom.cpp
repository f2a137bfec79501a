// The playground as a classroom (playground --classroom): a workspace per browser, runs queued
// within max_runs and trained side by side in processes of their own, a student stopping only
// their own run, the teacher's token, pause and stop (all, or one run), odd keys and the workspace
// limit, the limits per client address, idle workspaces closing, runs stopped at the teacher's
// bound, the teacher's log keeping each workspace's latest run; and the
// load test: 40 students planning while 10 train at once, every run finishing and the server's
// memory back to its level after.
// ACCRUE_CLASSROOM_SECONDS sets how long the students keep starting runs (20 s; ctest's label long
// runs 180 s).

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "playground_fixture.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

playground::PlaygroundOptions classroom(int max_runs, int threads_per_run = 1) {
  return {.classroom = true, .max_runs = max_runs, .threads_per_run = threads_per_run, .teacher_token = "t0ken"};
}

struct Student {
  std::string name, key;
  std::string at(const std::string& path) const { return path + "?w=" + key; }
};

Student open_workspace(const Served& s) {
  const auto [status, answer] = s.post("/api/workspaces", "");
  BOOST_REQUIRE_MESSAGE(status == 201, answer.dump());
  return {answer.at("name"), answer.at("key")};
}

// Polls `what` until it holds, at most `limit`.
bool eventually(const std::function<bool()>& what, std::chrono::seconds limit = std::chrono::seconds{60}) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!what()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return true;
}

std::size_t resident_bytes() {
  std::ifstream statm{"/proc/self/statm"};
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_student_has_a_workspace_and_stops_only_their_own_run) {
  Served s{2048, classroom(1)};
  const Student a = open_workspace(s), b = open_workspace(s);
  BOOST_TEST(a.name != b.name);
  BOOST_TEST(a.key != b.key);
  // Without a workspace, or with a key the server never gave: 404, whatever the route.
  for (const std::string path : {"/api/status", "/api/status?w=nope"}) BOOST_TEST(s.ask("GET", path).first == 404);
  BOOST_TEST(s.post("/api/runs", "{}").first == 404);
  BOOST_TEST(s.post("/api/stop", "").first == 404);
  // Plans need no workspace and are answered while runs go.
  const std::string paced = R"({"max_steps": 400, "pace_ms": 30})";
  const auto [started_a, run_a] = s.post(a.at("/api/runs"), paced);
  BOOST_TEST(started_a == 201);
  BOOST_TEST(run_a.at("queued") == 0);
  const auto [started_b, run_b] = s.post(b.at("/api/runs"), paced);
  BOOST_TEST(started_b == 201);
  BOOST_TEST(run_b.at("queued") == 1, "max_runs = 1: b waits behind a");
  BOOST_TEST(s.post(a.at("/api/runs"), "{}").first == 409);
  BOOST_TEST(s.post("/api/plan", R"({"micro_batch": 64})").first == 200);
  BOOST_TEST(eventually([&] { return s.playground.status(a.key).at("optimizer_steps") >= 1; }));
  BOOST_TEST(s.playground.status(b.key).at("queued") == 1);
  BOOST_TEST(s.playground.runs_alive() == 1);

  // b's page: queued first, then its run starts once a stops.
  std::vector<json> seen_b;
  std::thread watcher{[&] {
    seen_b = events(s, [](const json& e) { return e.at("type") == "micro_batch"; }, std::chrono::seconds{60}, b.at("/api/events"));
  }};
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  const auto [stopped, answer] = s.post(a.at("/api/stop"), "");
  BOOST_TEST(stopped == 200);
  BOOST_TEST(answer.at("stopped") == run_a.at("run"));
  BOOST_TEST(s.playground.status(a.key).at("outcome") == "stopped");
  watcher.join();
  BOOST_REQUIRE(!seen_b.empty());
  BOOST_TEST(seen_b.front().at("type") == "hello");
  BOOST_TEST(seen_b.front().at("queued") == 1);
  std::vector<std::int64_t> places;
  for (const json& e : seen_b)
    if (e.at("type") == "queue") places.push_back(e.at("position"));
  BOOST_TEST(places == (std::vector<std::int64_t>{1, 0}), boost::test_tools::per_element());
  BOOST_TEST(s.playground.status(b.key).at("queued") == 0);
  // a's stop did not touch b's run.
  BOOST_TEST(s.post(a.at("/api/stop"), "").first == 409);
  BOOST_TEST(s.playground.status(b.key).at("running") == true);

  // The teacher: a wrong token is refused; pause holds b's run, resume lets it go on.
  BOOST_TEST(s.ask("GET", "/teacher").first == 403);
  BOOST_TEST(s.ask("GET", "/teacher?token=wrong").first == 403);
  const std::optional<Reply> page = Connection{s.port}.ask("GET", "/teacher?token=t0ken");
  BOOST_TEST((page && page->status == 200 && page->body.find("teacher") != std::string::npos));
  BOOST_TEST(s.post("/api/teacher/pause?token=wrong", "").first == 403);
  BOOST_TEST(s.post("/api/teacher/pause?token=t0ken", "").first == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds{300});  // the micro-batch under way ends
  const json held = s.playground.status(b.key);
  std::this_thread::sleep_for(std::chrono::milliseconds{800});
  BOOST_TEST(s.playground.status(b.key).at("micro_batches") == held.at("micro_batches"));
  BOOST_TEST(held.at("paused") == true);
  BOOST_TEST(s.post("/api/teacher/resume?token=t0ken", "").first == 200);
  BOOST_TEST(eventually([&] { return s.playground.status(b.key).at("micro_batches") > held.at("micro_batches"); }));
  // Stop all: nothing trains, nothing waits, no process is left.
  const Student c = open_workspace(s);
  BOOST_TEST(s.post(c.at("/api/runs"), paced).first == 201);
  const auto [all, after] = s.post("/api/teacher/stop?token=t0ken", "");
  BOOST_TEST(all == 200);
  BOOST_TEST(after.at("training") == 0);
  BOOST_TEST(after.at("waiting") == 0);
  BOOST_TEST(s.playground.runs_alive() == 0);
  BOOST_TEST(s.playground.status(c.key).at("outcome") == "stopped");

  // The teacher's feed has every workspace and run from the start.
  std::set<std::string> workspaces;
  int ends = 0;
  events(s, [&](const json& e) {
    if (e.at("type") == "workspace") workspaces.insert(e.at("workspace").get<std::string>());
    ends += e.at("type") == "end";
    return ends == 3;
  }, std::chrono::seconds{10}, "/api/teacher/events?token=t0ken");
  BOOST_TEST(workspaces == (std::set<std::string>{a.name, b.name, c.name}), boost::test_tools::per_element());
  BOOST_TEST(ends == 3);
}

BOOST_AUTO_TEST_CASE(a_run_whose_process_dies_ends_failed_and_frees_its_place) {
  Served s{2048, classroom(1)};
  const Student a = open_workspace(s), b = open_workspace(s);
  BOOST_TEST(s.post(a.at("/api/runs"), R"({"pace_ms": 50})").first == 201);
  BOOST_TEST(s.post(b.at("/api/runs"), R"({"max_steps": 2})").first == 201);
  BOOST_REQUIRE(eventually([&] { return s.playground.status(a.key).at("micro_batches") >= 1; }));
  // The run's process killed from outside, as the kernel's out-of-memory killer would.
  // (The thread that started it lists it among its children.)
  std::string pid;
  for (const auto& task : std::filesystem::directory_iterator{"/proc/self/task"})
    if (pid.empty()) std::ifstream{task.path() / "children"} >> pid;
  BOOST_REQUIRE(!pid.empty());
  ::kill(std::stoi(pid), SIGKILL);
  BOOST_TEST(eventually([&] { return s.playground.status(a.key).at("outcome") == "failed"; }));
  // b was waiting behind it, and now trains to its end.
  BOOST_TEST(eventually([&] { return s.playground.status(b.key).at("outcome") == "finished"; }));
  // Its end is relayed before its process is reaped.
  BOOST_TEST(eventually([&] { return s.playground.runs_alive() == 0; }));
}

BOOST_AUTO_TEST_CASE(forty_students_plan_while_ten_train) {
  const char* env = std::getenv("ACCRUE_CLASSROOM_SECONDS");
  const double seconds = env != nullptr ? std::atof(env) : 20.0;
  playground::PlaygroundOptions options = classroom(10);
  options.per_address = 0;  // the forty students all come from 127.0.0.1 here
  Served s{4096, options};
  // A first plan builds what the server keeps (the planning model's caches); the baseline is after it.
  BOOST_REQUIRE(s.post("/api/plan", "{}").first == 200);
  const std::size_t live_before = memory_stats(Device::cpu()).live_total, resident_before = resident_bytes();
  const int threads_before = threads_of_this_process();

  std::vector<Student> students;
  for (int i = 0; i < 40; ++i) students.push_back(open_workspace(s));
  std::atomic<int> plans{0}, plan_failures{0}, runs{0}, finished{0}, other_ends{0}, most_training{0};
  std::mutex problems_mutex;
  std::vector<std::string> problems;
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int i = 0; i < 40; ++i)
    threads.emplace_back([&, i] {
      const Student& me = students[static_cast<std::size_t>(i)];
      std::mt19937 pick{static_cast<std::uint32_t>(i)};
      const bool trains = i < 10;  // ten students train; all forty plan
      while (std::chrono::steady_clock::now() < until) {
        const int micro = 1 << (pick() % 8), k = 1 + static_cast<int>(pick() % 8);
        const auto [planned, plan] = s.post(me.at("/api/plan"), fmt::format(R"({{"micro_batch": {}, "accumulate": {}, "model": "{}"}})",
                                                                           micro, k, pick() % 4 == 0 ? "cnn" : "mlp"));
        ++plans;
        if (planned != 200 || !plan.contains("peak")) ++plan_failures;
        if (!trains) {
          std::this_thread::sleep_for(std::chrono::milliseconds{50 + pick() % 200});
          continue;
        }
        const auto [status, run] = s.post(me.at("/api/runs"), R"({"micro_batch": 16, "accumulate": 4, "max_steps": 12})");
        if (status != 201) {
          const std::lock_guard lock{problems_mutex};
          problems.push_back(fmt::format("{}: POST /api/runs answered {} {}", me.name, status, run.dump()));
          continue;
        }
        ++runs;
        json last;
        eventually([&] {
          last = s.playground.status(me.key);
          most_training = std::max(most_training.load(), last.at("training").get<int>());
          return last.at("running") == false;
        }, std::chrono::seconds{300});
        if (last.at("outcome") == "finished" && last.at("optimizer_steps") == 12) ++finished;
        else {
          ++other_ends;
          const std::lock_guard lock{problems_mutex};
          problems.push_back(fmt::format("{}: run {} ended {}", me.name, run.at("run").dump(), last.dump()));
        }
      }
    });
  for (std::thread& t : threads) t.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("classroom: " << plans << " plans, " << runs << " runs (" << finished << " finished, at most "
                                   << most_training << " training at once) in " << took << " s");
  for (const std::string& p : problems) BOOST_TEST_MESSAGE(p);
  BOOST_TEST(problems.empty());
  BOOST_TEST(plan_failures == 0);
  BOOST_TEST(runs >= 10);
  BOOST_TEST(finished == runs);
  BOOST_TEST(most_training >= 2);
  BOOST_TEST(most_training <= 10);
  // Nothing of the runs is left: no process, no relay thread, the server's memory as before.
  BOOST_TEST(s.playground.runs_alive() == 0);
  BOOST_TEST(memory_stats(Device::cpu()).live_total == live_before);
  BOOST_TEST(eventually([&] { return threads_of_this_process() <= threads_before + 1; }, std::chrono::seconds{5}));
  const double grown = (static_cast<double>(resident_bytes()) - static_cast<double>(resident_before)) / (1 << 20);
  BOOST_TEST_MESSAGE("server resident memory: " << resident_before / (1 << 20) << " MiB before, grown by " << grown << " MiB");
  BOOST_TEST(grown < 64.0);
}

BOOST_AUTO_TEST_CASE(keys_tokens_and_the_workspace_limit_hold_against_odd_requests) {
  playground::PlaygroundOptions options = classroom(1);
  options.max_workspaces = 2;
  Served s{2048, options};
  open_workspace(s);
  open_workspace(s);
  const auto [full, why] = s.post("/api/workspaces", "");
  BOOST_TEST(full == 503);
  BOOST_TEST(why.at("error").get<std::string>().find("full (2 workspaces)") != std::string::npos);
  // Keys the server never gave: empty, cut percent escapes, bytes that are not UTF-8, a long one.
  for (const std::string& key : std::vector<std::string>{"", "%", "%4", "%zz", "%ff%fe", std::string(4000, 'a'), "a&w=b"}) {
    BOOST_TEST_CONTEXT("key " << key.substr(0, 20)) {
      BOOST_TEST(s.ask("GET", "/api/status?w=" + key).first == 404);
      BOOST_TEST(s.post("/api/runs?w=" + key, "{}").first == 404);
      BOOST_TEST(s.post("/api/teacher/stop?token=" + key, "").first == 403);
    }
  }
  BOOST_TEST(s.playground.runs_alive() == 0);
}

namespace {

// The open connection of an event stream: the status its head says (0 when none came).
int stream_status(Connection& c, const Served& s, const std::string& path) {
  if (!c.send(accrue::test::http::request("GET", path, s.port))) return 0;
  std::string head;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  while (head.find("\r\n") == std::string::npos && std::chrono::steady_clock::now() < deadline) head += c.read_some();
  return head.size() > 12 ? std::atoi(head.substr(9, 3).c_str()) : 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_address_cannot_fill_the_room_or_lock_out_the_teacher) {
  // Workspaces and event streams per client address: one client used to open all 200 workspaces in a
  // second, and two held all 256 streams, the teacher's page getting 503.
  playground::PlaygroundOptions options = classroom(1);
  options.per_address = 2;
  Served s{2048, options};
  const Student a = open_workspace(s);
  open_workspace(s);
  const auto [refused, why] = s.post("/api/workspaces", "");
  BOOST_TEST(refused == 429);
  BOOST_TEST(why.at("error").get<std::string>().find("2 workspaces open already") != std::string::npos);
  std::vector<std::unique_ptr<Connection>> pages;
  for (int i = 0; i < 8; ++i) {
    pages.push_back(std::make_unique<Connection>(s.port, std::chrono::milliseconds{500}));
    BOOST_TEST(stream_status(*pages.back(), s, a.at("/api/events")) == 200);
  }
  Connection ninth{s.port, std::chrono::milliseconds{500}};
  BOOST_TEST(stream_status(ninth, s, a.at("/api/events")) == 429);
  // The teacher's streams are counted apart.
  Connection teacher{s.port, std::chrono::milliseconds{500}};
  BOOST_TEST(stream_status(teacher, s, "/api/teacher/events?token=t0ken") == 200);
  // Pages closed, their places free again.
  pages.clear();
  BOOST_TEST(eventually([&] {
    Connection again{s.port, std::chrono::milliseconds{500}};
    return stream_status(again, s, a.at("/api/events")) == 200;
  }, std::chrono::seconds{10}));
}

BOOST_AUTO_TEST_CASE(idle_workspaces_close_and_long_runs_stop) {
  playground::PlaygroundOptions options = classroom(2);
  options.workspace_idle = std::chrono::milliseconds{1500};
  options.max_run = std::chrono::milliseconds{1500};
  Served s{2048, options};
  // A workspace nobody uses closes: its key is forgotten, the teacher's page told.
  const Student idle = open_workspace(s);
  std::this_thread::sleep_for(std::chrono::milliseconds{2500});
  BOOST_TEST(s.ask("GET", idle.at("/api/status")).first == 404);
  // A run of micro-batch 1 for 20 epochs (weeks on a busy machine) stops at the teacher's bound,
  // saying why; its workspace, with a page watching, stays.
  const Student long_run = open_workspace(s);
  BOOST_TEST(s.post(long_run.at("/api/runs"), R"({"micro_batch": 1, "accumulate": 1, "epochs": 20, "pace_ms": 20})").first == 201);
  const auto t0 = std::chrono::steady_clock::now();
  std::string notice;
  const std::vector<json> seen = events(s, [&](const json& e) {
    if (e.at("type") == "notice") notice = e.at("message");
    return e.at("type") == "end";
  }, std::chrono::seconds{60}, long_run.at("/api/events"));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST_MESSAGE("the long run ended after " << took << " s: " << notice);
  BOOST_REQUIRE(!seen.empty());
  BOOST_TEST(seen.back().at("type") == "end");
  BOOST_TEST(seen.back().at("outcome") == "stopped");
  BOOST_TEST(notice.find("limit of 1.5 s") != std::string::npos);
  BOOST_TEST(took < 20.0);
  BOOST_TEST(s.ask("GET", long_run.at("/api/status")).first == 200);
  // A teacher's page opened now is told the idle workspace closed, and nothing else of it.
  bool closed = false, opened = false;
  events(s, [&](const json& e) {
    if (e.at("workspace") == idle.name) (e.at("type") == "closed" ? closed : opened) = true;
    return e.at("type") == "end";
  }, std::chrono::seconds{10}, "/api/teacher/events?token=t0ken");
  BOOST_TEST(closed);
  BOOST_TEST(!opened);
}

BOOST_AUTO_TEST_CASE(the_teacher_stops_one_run_and_the_log_keeps_each_workspaces_latest_run) {
  Served s{2048, classroom(2)};
  const Student a = open_workspace(s), b = open_workspace(s);
  const std::string paced = R"({"max_steps": 400, "pace_ms": 30})";
  BOOST_TEST(s.post(a.at("/api/runs"), paced).first == 201);
  BOOST_TEST(s.post(b.at("/api/runs"), paced).first == 201);
  BOOST_REQUIRE(eventually([&] {
    return s.playground.status(a.key).at("optimizer_steps") >= 2 && s.playground.status(b.key).at("optimizer_steps") >= 2;
  }));
  // The teacher stops a's run alone; b's goes on.
  BOOST_TEST(s.post("/api/teacher/stop?token=t0ken&workspace=" + a.name, "").first == 200);
  BOOST_TEST(s.playground.status(a.key).at("outcome") == "stopped");
  BOOST_TEST(s.playground.status(b.key).at("running") == true);
  BOOST_TEST(s.post("/api/teacher/stop?token=t0ken&workspace=" + a.name, "").first == 404);
  BOOST_TEST(s.post("/api/teacher/stop?token=t0ken&workspace=nobody", "").first == 404);
  BOOST_TEST(s.post("/api/teacher/stop?token=t0ken", "").first == 200);
  // a's second run: the teacher's log keeps only it, so a page opened now sees one start of a.
  BOOST_TEST(s.post(a.at("/api/runs"), R"({"max_steps": 3})").first == 201);
  BOOST_REQUIRE(eventually([&] { return s.playground.status(a.key).at("outcome") == "finished"; }));
  int starts_of_a = 0, ends = 0;
  std::set<std::int64_t> runs_of_a;
  events(s, [&](const json& e) {
    if (e.at("type") == "start" && e.at("workspace") == a.name) ++starts_of_a, runs_of_a.insert(e.at("run").get<std::int64_t>());
    if (e.at("type") == "steps" && e.at("workspace") == a.name) runs_of_a.insert(e.at("run").get<std::int64_t>());
    ends += e.at("type") == "end";
    return ends == 2;
  }, std::chrono::seconds{10}, "/api/teacher/events?token=t0ken");
  BOOST_TEST(starts_of_a == 1);
  BOOST_TEST(runs_of_a.size() == 1u);
  BOOST_TEST(ends == 2);
}
