// The playground's HTTP API (examples/playground/playground_server.hpp) on loopback, over random
// images shaped like FashionMNIST: bad settings answered 400 with the setting named, a run's events
// streamed, and a load test (50 clients polling, pages watching, 20 start/stop cycles) after which
// no training thread is left and memory is back to its level.

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <filesystem>
#include <limits>
#include <thread>

#include "playground_server.hpp"
#include "test_util.hpp"

using namespace accrue;
using playground::json;
using test::random_images;

namespace {

// A Playground served on a free loopback port, in its own thread.
struct Served {
  playground::Playground playground;
  httplib::Server server;
  int port = 0;
  std::thread thread;

  explicit Served(Dataset train) : playground(std::move(train), Device::cpu()) {
    playground.serve(server, "<!DOCTYPE html><title>playground</title>");
    port = server.bind_to_any_port("127.0.0.1");
    BOOST_REQUIRE(port > 0);
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  ~Served() {
    server.stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c{"127.0.0.1", port};
    c.set_read_timeout(30);
    return c;
  }
  // POST with a JSON body: the status and the answer.
  std::pair<int, json> post(const std::string& path, const std::string& body) const {
    auto c = client();
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = c.Post(path, body, "application/json");
    BOOST_REQUIRE_MESSAGE(r, "POST " << path << " got no answer: " << httplib::to_string(r.error()) << " after "
                                     << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                                     << " s");
    return {r->status, json::parse(r->body)};
  }
};

int threads_of_this_process() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator{"/proc/self/task"}) ++n;
  return n;
}

// The events of GET /api/events until `until` says stop (given each event), or `limit` passes.
std::vector<json> events(const Served& s, const std::function<bool(const json&)>& until,
                         std::chrono::seconds limit = std::chrono::seconds{60}) {
  std::vector<json> out;
  std::string buffer;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto c = s.client();
  c.Get("/api/events", [&](const char* data, std::size_t size) {
    buffer.append(data, size);
    for (std::size_t end; (end = buffer.find("\n\n")) != std::string::npos; buffer.erase(0, end + 2)) {
      const std::string frame = buffer.substr(0, end);
      if (!frame.starts_with("data: ")) continue;  // ":" comments keep the stream alive
      out.push_back(json::parse(frame.substr(6)));
      if (until(out.back())) return false;
    }
    return std::chrono::steady_clock::now() < deadline;
  });
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(bad_settings_get_400_naming_the_setting) {
  Served s{random_images(2048)};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"micro_batch": 0})", "micro_batch"},
      {R"({"micro_batch": "abc"})", "micro_batch"},
      {R"({"micro_batch": 16.5})", "micro_batch"},
      {R"({"micro_batch": -3})", "micro_batch"},
      {R"({"accumulate": 1000000000})", "accumulate"},
      {R"({"micro_batch": 512, "accumulate": 64})", "training samples"},
      {R"({"lr": -1})", "lr"},
      {R"({"lr": "fast"})", "lr"},
      {R"({"model": "rnn"})", "model"},
      {R"({"amp": "yes"})", "amp"},
      {R"({"normalization": "mean"})", "normalization"},
      {R"({"pace_ms": 100000})", "pace_ms"},
      {R"({"batch": 64})", "unknown setting 'batch'"},
      {R"([16, 4])", "JSON object"},
      {"micro_batch=16", "not JSON"},
  };
  for (const auto& [body, named] : cases) {
    for (const char* path : {"/api/runs", "/api/plan"}) {
      const auto [status, answer] = s.post(path, body);
      BOOST_TEST_CONTEXT(path << " " << body << " -> " << answer.dump()) {
        BOOST_TEST(status == 400);
        BOOST_TEST(answer.at("error").get<std::string>().find(named) != std::string::npos);
      }
    }
  }
  BOOST_TEST(s.playground.training_threads() == 0);
  BOOST_TEST(s.post("/api/stop", "").first == 409);
  auto c = s.client();
  const auto missing = c.Get("/api/nothing");
  BOOST_REQUIRE(missing);
  BOOST_TEST(missing->status == 404);
  BOOST_TEST(json::parse(missing->body).at("error").get<std::string>().find("/api/nothing") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_plan_past_the_cap_advises_a_micro_batch) {
  Served s{random_images(2048)};
  const auto [status, plan] = s.post("/api/plan", R"({"micro_batch": 64, "accumulate": 1, "memory_cap_mib": 5.3})");
  BOOST_TEST(status == 200);
  BOOST_TEST(plan.at("fits") == false);
  BOOST_TEST(plan.at("advice").at("micro_batch") == 16);
  BOOST_TEST(plan.at("advice").at("accumulate") == 4);
  BOOST_TEST(plan.at("message").get<std::string>().find("Micro-batches of 16 with accumulate(4)") != std::string::npos);
  const auto [ok, fits] = s.post("/api/plan", R"({"micro_batch": 16, "accumulate": 4, "memory_cap_mib": 5.3})");
  BOOST_TEST(fits.at("fits") == true);
}

BOOST_AUTO_TEST_CASE(a_run_streams_micro_batches_steps_and_its_end) {
  Served s{random_images(2048)};
  std::thread watcher;
  std::vector<json> seen;
  watcher = std::thread([&] { seen = events(s, [](const json& e) { return e.at("type") == "end"; }); });
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  const auto [status, started] =
      s.post("/api/runs", R"({"micro_batch": 16, "accumulate": 4, "max_steps": 2, "pace_ms": 20})");
  BOOST_TEST(status == 201);
  watcher.join();
  BOOST_REQUIRE(seen.size() >= 4);
  BOOST_TEST(seen.front().at("type") == "hello");
  std::vector<int> positions;
  std::vector<double> step_losses;
  for (const json& e : seen) {
    if (e.at("type") != "micro_batch") continue;
    positions.push_back(e.at("k"));
    BOOST_TEST(e.at("n") == 4);
    for (const json& p : e.at("steps")) step_losses.push_back(p.at("loss"));
  }
  // With a pause per micro-batch every micro-batch is an event: 1..4 twice.
  BOOST_TEST(positions == (std::vector<int>{1, 2, 3, 4, 1, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(step_losses.size() == 2u);
  const json& end = seen.back();
  BOOST_TEST(end.at("outcome") == "finished");
  BOOST_TEST(end.at("optimizer_steps") == 2);
  BOOST_TEST(end.at("micro_batches") == 8);
}

BOOST_AUTO_TEST_CASE(fifty_pollers_and_twenty_start_stop_cycles) {
  Served s{random_images(8192)};
  // A first run starts the threads that stay (the compute pool); the baseline is after it.
  BOOST_TEST(s.post("/api/runs", R"({"max_steps": 1})").first == 201);
  for (int i = 0; i < 200 && s.playground.status().at("running") == true; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  s.post("/api/stop", "");
  const int threads_before = threads_of_this_process();
  const std::size_t memory_before = memory_stats(Device::cpu()).live_total;
  const auto start = std::chrono::steady_clock::now();

  std::atomic<bool> done{false};
  std::atomic<int> polls{0}, failures{0}, streamed{0}, least_answered{std::numeric_limits<int>::max()};
  std::vector<std::thread> clients;
  for (int i = 0; i < 50; ++i)
    clients.emplace_back([&] {
      auto c = s.client();
      int answered = 0;
      while (!done) {
        const auto r = c.Get("/api/status");
        if (!r || r->status != 200 || !json::parse(r->body).contains("running")) ++failures;
        else ++answered;
        ++polls;
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
      }
      for (int least = least_answered; answered < least && !least_answered.compare_exchange_weak(least, answered);) {
      }
    });
  for (int i = 0; i < 5; ++i)  // pages watching through all the cycles
    clients.emplace_back([&] {
      events(s, [&](const json&) {
        ++streamed;
        return done.load();
      });
    });

  int started = 0, stopped = 0;
  for (int cycle = 0; cycle < 20; ++cycle) {
    const auto [status, run] = s.post("/api/runs", R"({"micro_batch": 16, "accumulate": 4, "pace_ms": 2})");
    started += status == 201;
    std::this_thread::sleep_for(std::chrono::milliseconds{30 + 10 * (cycle % 5)});
    const auto [refused, _] = s.post("/api/runs", "{}");
    BOOST_TEST(refused == 409);
    const auto [stop_status, stop_answer] = s.post("/api/stop", "");
    BOOST_TEST(stop_status == 200, "cycle " << cycle << ": POST /api/stop answered " << stop_status << " "
                                            << stop_answer.dump() << "; status " << s.playground.status().dump());
    stopped += stop_status == 200;
    BOOST_TEST(s.playground.training_threads() == 0);
  }
  done = true;
  // A watcher returns at its next event or at the keep-alive comment a second later.
  s.post("/api/runs", R"({"max_steps": 1})");
  for (std::thread& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("load: " << polls << " polls, " << streamed << " events streamed, " << started << " runs started, "
                              << stopped << " stopped, in " << seconds << " s");
  BOOST_TEST(started == 20);
  BOOST_TEST(stopped == 20);
  BOOST_TEST(failures == 0);
  // Every poller was answered, without a failure (how often depends on the machine's load).
  BOOST_TEST(least_answered >= 1);
  BOOST_TEST(seconds < 120.0);

  // The last run (one step) ends by itself; then nothing of the runs is left.
  for (int i = 0; i < 200 && s.playground.status().at("running") == true; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  BOOST_TEST(s.playground.status().at("running") == false);
  BOOST_TEST(s.playground.training_threads() == 0);
  BOOST_TEST(memory_stats(Device::cpu()).live_total == memory_before);
  BOOST_TEST(memory_stats(Device::cpu()).limit == 0u);
  // The last run's thread has returned; the system lets it go a moment later.
  for (int i = 0; i < 100 && threads_of_this_process() > threads_before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  BOOST_TEST(threads_of_this_process() == threads_before);
  const auto [status, answer] = s.post("/api/plan", "{}");
  BOOST_TEST(status == 200);
}
