// The playground's HTTP API (examples/playground/playground_server.hpp) on loopback, over random
// images shaped like FashionMNIST: bad settings answered 400 with the setting named, a run's events
// streamed, and a load test (50 clients polling, pages watching, 20 start/stop cycles) after which
// no training process is left and memory is back to its level. The classroom is test_classroom.cpp.

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <limits>
#include <thread>

#include "playground_fixture.hpp"

using namespace accrue;
using namespace accrue::test;


BOOST_AUTO_TEST_CASE(bad_settings_get_400_naming_the_setting) {
  Served s{2048};
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
      {R"({"precision": "half"})", "precision"},
      {R"({"overflow": 1})", "overflow"},
      {R"({"uneven": "yes"})", "uneven"},
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
  BOOST_TEST(s.playground.runs_alive() == 0);
  BOOST_TEST(s.post("/api/stop", "").first == 409);
  // A stop as curl -X POST sends it: no body, no Content-Length.
  Connection bare{s.port};
  bare.send("POST /api/stop HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port) + "\r\n\r\n");
  const std::optional<Reply> stopped = bare.read();
  BOOST_REQUIRE(stopped);
  BOOST_TEST(stopped->status == 409);
  BOOST_TEST(stopped->json().at("error") == "no run is going");
  const auto [missing, answer] = s.ask("GET", "/api/nothing");
  BOOST_TEST(missing == 404);
  BOOST_TEST(answer.at("error").get<std::string>().find("/api/nothing") != std::string::npos);
  const auto [wrong_method, why] = s.ask("GET", "/api/runs");
  BOOST_TEST(wrong_method == 405);
  BOOST_TEST(why.at("error").get<std::string>().find("POST") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_plan_past_the_cap_advises_a_micro_batch) {
  Served s{2048};
  const auto [status, plan] = s.post("/api/plan", R"({"micro_batch": 64, "accumulate": 1, "memory_cap_mib": 5.3})");
  BOOST_TEST(status == 200);
  BOOST_TEST(plan.at("fits") == false);
  BOOST_TEST(plan.at("advice").at("micro_batch") == 16);
  BOOST_TEST(plan.at("advice").at("accumulate") == 4);
  BOOST_TEST(plan.at("message").get<std::string>().find("Micro-batches of 16 with accumulate(4)") != std::string::npos);
  const auto [ok, fits] = s.post("/api/plan", R"({"micro_batch": 16, "accumulate": 4, "memory_cap_mib": 5.3})");
  BOOST_TEST(fits.at("fits") == true);
}

// The recomputation switch: the plan keeps less for backward (the activations), and says so.
BOOST_AUTO_TEST_CASE(recomputation_shrinks_the_plans_activations) {
  Served s{2048};
  const auto [status, plain] = s.post("/api/plan", R"({"model": "cnn", "micro_batch": 64, "accumulate": 1})");
  const auto [status2, recomputed] =
      s.post("/api/plan", R"({"model": "cnn", "micro_batch": 64, "accumulate": 1, "recompute": true})");
  BOOST_TEST(status == 200);
  BOOST_TEST(status2 == 200);
  const int activations = static_cast<int>(MemoryCategory::activations);
  BOOST_TEST(recomputed.at("plan").at(activations).get<std::size_t>() < plain.at("plan").at(activations).get<std::size_t>());
  BOOST_TEST(plain.at("recompute") == "none");
  BOOST_TEST(recomputed.at("recompute") == "sqrt(n) segments");
  const auto [bad, why] = s.post("/api/plan", R"({"recompute": 1})");
  BOOST_TEST(bad == 400);
  BOOST_TEST(why.at("error").get<std::string>().find("recompute") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_run_streams_micro_batches_steps_and_its_end) {
  Served s{2048};
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
    BOOST_TEST(e.at("ms_per_sample").get<double>() > 0.0);
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

// A page told of a run's end enables Run: a start at that moment is taken, not refused as "a run
// is going" while the finished run's process is still exiting.
BOOST_AUTO_TEST_CASE(a_start_right_after_the_end_is_taken) {
  Served s{2048};
  const std::string run = R"({"micro_batch": 16, "accumulate": 1, "max_steps": 1, "pace_ms": 0})";
  std::vector<int> answers;  // the status of each start made as its stream told the run before's end
  std::vector<std::string> outcomes;
  std::thread watcher{[&] {
    events(s, [&](const json& e) {
      if (e.at("type") != "end") return false;
      outcomes.push_back(e.at("outcome"));
      if (outcomes.size() == 6) return true;
      answers.push_back(s.post("/api/runs", run).first);
      return false;
    });
  }};
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  BOOST_TEST(s.post("/api/runs", run).first == 201);
  watcher.join();
  BOOST_TEST(answers == (std::vector<int>(5, 201)), boost::test_tools::per_element());
  BOOST_TEST(outcomes == (std::vector<std::string>(6, "finished")), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(fifty_pollers_and_twenty_start_stop_cycles) {
  Served s{8192};
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
      Connection c{s.port};  // kept alive, as a polling page keeps its connection
      int answered = 0;
      while (!done) {
        const auto r = c.ask("GET", "/api/status");
        if (!r || r->status != 200 || !r->json().contains("running")) ++failures;
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
    BOOST_TEST(s.playground.runs_alive() == 0);
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
  BOOST_TEST(s.playground.runs_alive() == 0);
  BOOST_TEST(memory_stats(Device::cpu()).live_total == memory_before);
  BOOST_TEST(memory_stats(Device::cpu()).limit == 0u);
  // The last run's thread has returned; the system lets it go a moment later.
  for (int i = 0; i < 100 && threads_of_this_process() > threads_before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  BOOST_TEST(threads_of_this_process() == threads_before);
  const auto [status, answer] = s.post("/api/plan", "{}");
  BOOST_TEST(status == 200);
}

// ---- Clients that misbehave on purpose ----

namespace {

// A JSON array nested `depth` deep, as the setting `key`.
std::string nested(int depth, const std::string& key = "lr") {
  return "{\"" + key + "\": " + std::string(static_cast<std::size_t>(depth), '[') +
         std::string(static_cast<std::size_t>(depth), ']') + "}";
}

// `body` sent with Transfer-Encoding: chunked, in chunks of `chunk` bytes.
std::string chunked(const std::string& path, int port, std::string_view body, std::size_t chunk = 4096) {
  std::string r = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                  "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (std::size_t i = 0; i < body.size(); i += chunk) {
    const std::string_view part = body.substr(i, chunk);
    r += fmt::format("{:x}\r\n", part.size()) + std::string(part) + "\r\n";
  }
  return r + "0\r\n\r\n";
}

}  // namespace

BOOST_AUTO_TEST_CASE(deep_json_and_bodies_of_any_framing_are_bounded) {
  Served s{2048};
  for (const char* path : {"/api/plan", "/api/runs"}) {
    // 32,000 levels fit in 64 KiB: refused as the parser goes past the 8th, never dumped whole.
    Connection c{s.port};
    BOOST_REQUIRE(c.send(chunked(path, s.port, nested(32'000))));
    const std::optional<Reply> deep = c.read();
    BOOST_REQUIRE(deep);
    BOOST_TEST(deep->status == 400);
    BOOST_TEST(deep->json().at("error") == "the settings are nested more than 8 deep");
    // Eight levels parse, and the message names the value by its type and size.
    const auto [status, answer] = s.post(path, nested(7));
    BOOST_TEST(status == 400);
    BOOST_TEST(answer.at("error") == "lr: an array of 1 item is not a number from 0 (excluded) to 10");
  }
  // A chunked body past 64 KiB: 413 once it passes, and the connection closes (the rest is never
  // read into memory).
  Connection big{s.port};
  const std::string megabytes(8 << 20, ' ');
  big.send(chunked("/api/plan", s.port, megabytes, 1 << 16));
  std::optional<Reply> over = big.read();
  BOOST_REQUIRE(over);
  BOOST_TEST(over->status == 413);
  BOOST_TEST(over->json().at("error") == "the request's body is over 65536 bytes");
  BOOST_TEST(big.closed_by_server());
  // A Content-Length past the limit is refused from the head, before any of the body.
  Connection declared{s.port};
  declared.send("POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port) +
                "\r\nContent-Length: 1073741824\r\n\r\n{");
  over = declared.read();
  BOOST_REQUIRE(over);
  BOOST_TEST(over->status == 413);
  // A head past 8 KiB: 431.
  Connection head{s.port};
  head.send("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port) + "\r\nX-Big: " +
            std::string(10'000, 'x') + "\r\n\r\n");
  over = head.read();
  BOOST_REQUIRE(over);
  BOOST_TEST(over->status == 431);
  BOOST_TEST(s.ask("GET", "/api/status").first == 200);
}

BOOST_AUTO_TEST_CASE(settings_that_break_json_get_400_naming_the_setting) {
  Served s{2048};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"model\": \"\xff\xfe\"}", "invalid string: ill-formed UTF-8 byte"},
      {R"({"lr": 1e309})", "the settings are not JSON: lr: a number too large for a double"},
      {std::string("{\"a\\u0000b\": 1}"), R"(unknown setting 'a\x00b')"},
      {R"({"memory_cap_mib": 1e-9})", "memory_cap_mib: 1e-09 MiB is less than one byte; 0 means no cap"},
      {"{\"model\": \"" + std::string(3000, 'x') + "\"}", "model: a text of 3000 bytes is not one of mlp, cnn"},
      {R"({"model": {"a": [1, 2]}})", "model: an object of 1 key is not one of mlp, cnn"},
  };
  for (const auto& [body, says] : cases) {
    for (const char* path : {"/api/runs", "/api/plan"}) {
      const auto [status, answer] = s.post(path, body);
      BOOST_TEST_CONTEXT(path << " " << body.substr(0, 60) << " -> " << answer.dump()) {
        BOOST_TEST(status == 400);
        BOOST_TEST(answer.at("error").get<std::string>().find(says) != std::string::npos);
        // Never the client's value whole.
        BOOST_TEST(answer.dump().size() < 300u);
      }
    }
  }
  // Over 64 KiB by Content-Length: 413 saying so, not "no such page".
  const auto [status, answer] = s.post("/api/plan", "{\"model\": \"" + std::string(70'000, 'x') + "\"}");
  BOOST_TEST(status == 413);
  BOOST_TEST(answer.at("error") == "the request's body is over 65536 bytes");
  // curl sends Expect: 100-continue with bodies over 1 KiB.
  Connection c{s.port};
  const std::string body = R"({"micro_batch": 16, "accumulate": 4})" + std::string(2000, ' ');
  c.send("POST /api/plan HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port) +
         "\r\nExpect: 100-continue\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  const std::optional<Reply> go_on = c.read();
  BOOST_REQUIRE(go_on);
  BOOST_TEST(go_on->status == 100);
  c.send(body);
  const std::optional<Reply> plan = c.read();
  BOOST_REQUIRE(plan);
  BOOST_TEST(plan->status == 200);
}

namespace {

// 150 connections from one address, each sent `first`: past the per-address limit of 128.
std::vector<std::unique_ptr<Connection>> slow_clients(const Served& s, const std::string& first) {
  std::vector<std::unique_ptr<Connection>> slow;
  for (int i = 0; i < 150; ++i) {
    slow.push_back(std::make_unique<Connection>(s.port, std::chrono::milliseconds{10}));
    slow.back()->send(first);
  }
  return slow;
}

// Eight rounds of each slow client sending `more` and a status asked beside them, each answered 200
// with no more than the limit open; the slowest answer's seconds.
double slowest_answer_beside(const Served& s, std::vector<std::unique_ptr<Connection>>& slow, const std::string& more) {
  double slowest = 0;
  for (int i = 0; i < 8; ++i) {
    for (auto& c : slow) c->send(more);
    const auto t0 = std::chrono::steady_clock::now();
    const auto [status, answer] = s.ask("GET", "/api/status");
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    BOOST_TEST(status == 200);
    BOOST_TEST(s.server.connections() <= 128 + 1);
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  return slowest;
}

}  // namespace

BOOST_AUTO_TEST_CASE(slow_clients_take_no_one_elses_answer) {
  // 150 connections from one address send their heads a byte at a time, past the per-address
  // limit of 128: every other request is still answered at once, the server closes the slow ones
  // at their deadline, and no more than the limit stay open meanwhile.
  Served s{2048, {}, {.request_deadline = std::chrono::milliseconds{1500}}};
  std::vector<std::unique_ptr<Connection>> slow = slow_clients(s, "G");
  const auto start = std::chrono::steady_clock::now();
  const double slowest = slowest_answer_beside(s, slow, "E");
  BOOST_TEST_MESSAGE("slowest status answer beside 150 slow clients: " << slowest << " s");
  BOOST_TEST(slowest < 1.0);
  // Past the deadline every slow connection has been closed.
  std::this_thread::sleep_for(std::chrono::milliseconds{1500} - (std::chrono::steady_clock::now() - start) +
                              std::chrono::milliseconds{500});
  int open = 0;
  for (auto& c : slow) open += !c->closed_by_server();
  BOOST_TEST(open == 0);
  BOOST_TEST(s.server.connections() == 0);
}

BOOST_AUTO_TEST_CASE(slow_bodies_do_not_lock_out_their_own_address) {
  // 150 connections send a whole head at once, then their bodies a byte at a time: they too give
  // way to new connections from their address (a slow body used to hold its place to the deadline).
  Served s{2048, {}, {.request_deadline = std::chrono::milliseconds{4000}}};
  std::vector<std::unique_ptr<Connection>> slow =
      slow_clients(s, "POST /api/plan HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port) +
                          "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
  const double slowest = slowest_answer_beside(s, slow, " ");
  BOOST_TEST_MESSAGE("slowest status answer beside 150 slow bodies: " << slowest << " s");
  BOOST_TEST(slowest < 1.0);
}

BOOST_AUTO_TEST_CASE(pipelined_requests_are_all_answered_in_order) {
  Served s{2048};
  Connection c{s.port};
  c.send(accrue::test::http::request("GET", "/api/status", s.port) + accrue::test::http::request("GET", "/api/nothing", s.port) +
         accrue::test::http::request("POST", "/api/plan", s.port, "{}"));
  const std::optional<Reply> first = c.read(), second = c.read(), third = c.read();
  BOOST_REQUIRE(first);
  BOOST_REQUIRE(second);
  BOOST_REQUIRE(third);
  BOOST_TEST(first->status == 200);
  BOOST_TEST(second->status == 404);
  BOOST_TEST(third->status == 200);
  BOOST_TEST(third->json().contains("plan"));
}

BOOST_AUTO_TEST_CASE(only_the_servers_own_names_are_answered) {
  Served s{2048};
  const std::string port = std::to_string(s.port);
  for (const std::string host : {"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port}) {
    Connection c{s.port};
    c.send("GET /api/status HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    const std::optional<Reply> r = c.read();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200, host);
  }
  // A page of a site whose name resolves to 127.0.0.1 (DNS rebinding), another port, or no Host.
  for (const std::string host : {"Host: rebind.example:" + port + "\r\n", "Host: 127.0.0.1:" + port + "0\r\n",
                                 std::string{"Host: 127.0.0.1\r\n"}, std::string{}}) {
    Connection c{s.port};
    c.send("GET /api/status HTTP/1.1\r\n" + host + "\r\n");
    const std::optional<Reply> r = c.read();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 403, host);
    BOOST_TEST(r->json().at("error").get<std::string>().find("does not name this server") != std::string::npos);
  }
  // A POST from a page of another site.
  const auto [status, answer] = s.ask("POST", "/api/runs", "{}", "Origin: http://evil.example\r\n");
  BOOST_TEST(status == 403);
  BOOST_TEST(s.playground.runs_alive() == 0);
  // The page's own origin may.
  const auto [plan, _] = s.ask("POST", "/api/plan", "{}", "Origin: http://127.0.0.1:" + port + "\r\n");
  BOOST_TEST(plan == 200);
}
