#pragma once
// A Playground served on a free loopback port, its runs trained by the built playground program
// (PLAYGROUND_PROGRAM) over random images written as FashionMNIST's files; and a page's view of
// its event stream.

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <functional>
#include <thread>

#include "http_client.hpp"
#include "../../examples/playground/playground_server.hpp"
#include "../test_util.hpp"

namespace accrue::test {

using playground::json;
using accrue::test::http::Connection;
using accrue::test::http::Reply;

struct Served {
  TempDir data;
  playground::Playground playground;
  playground::http::Server server;
  int port = 0;
  std::thread thread;

  // `samples` random training images; `options` the playground's, less what the fixture fills in.
  explicit Served(std::int64_t samples, playground::PlaygroundOptions options = {},
                  playground::http::ServerOptions server_options = {})
      : data(fmt::format("playground_{}", samples)),
        playground(with_data(data, samples, std::move(options))),
        server(server_options) {
    playground.serve(server, "<!DOCTYPE html><title>playground</title>", "<!DOCTYPE html><title>teacher</title>");
    port = server.bind("127.0.0.1", 0);
    thread = std::thread([this] { server.run(); });
  }
  ~Served() {
    server.stop();
    thread.join();
  }
  // A request on a connection of its own: the status and the answer.
  std::pair<int, json> ask(const std::string& method, const std::string& path, const std::string& body = "",
                           const std::string& extra = "") const {
    Connection c{port};
    const auto t0 = std::chrono::steady_clock::now();
    const std::optional<Reply> r = c.ask(method, path, body, extra);
    BOOST_REQUIRE_MESSAGE(r, method << " " << path << " got no answer after "
                                    << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                                    << " s");
    return {r->status, r->json()};
  }
  std::pair<int, json> post(const std::string& path, const std::string& body) const { return ask("POST", path, body); }

 private:
  static playground::PlaygroundOptions with_data(const TempDir& data, std::int64_t samples,
                                                 playground::PlaygroundOptions options) {
    write_fashion_mnist_files(data.path.string(), samples, 64);
    options.worker = {PLAYGROUND_PROGRAM, "--data", data.path.string(), "--device", "cpu"};
    options.training_samples = samples;
    return options;
  }
};

inline int threads_of_this_process() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator{"/proc/self/task"}) ++n;
  return n;
}

// The events of GET `path` (a workspace's /api/events) until `until` says stop (given each
// event), or `limit` passes.
inline std::vector<json> events(const Served& s, const std::function<bool(const json&)>& until,
                                std::chrono::seconds limit = std::chrono::seconds{60},
                                const std::string& path = "/api/events") {
  std::vector<json> out;
  Connection c{s.port, std::chrono::milliseconds{1000}};
  BOOST_REQUIRE(c.send(accrue::test::http::request("GET", path, s.port)));
  std::string buffer;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool head = true;
  while (std::chrono::steady_clock::now() < deadline) {
    buffer += c.read_some();
    if (head) {
      const std::size_t end = buffer.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      BOOST_REQUIRE_MESSAGE(buffer.starts_with("HTTP/1.1 200"), buffer.substr(0, buffer.find("\r\n")));
      buffer.erase(0, end + 4);
      head = false;
    }
    for (std::size_t end; (end = buffer.find("\n\n")) != std::string::npos; buffer.erase(0, end + 2)) {
      const std::string frame = buffer.substr(0, end);
      if (!frame.starts_with("data: ")) continue;  // ":" comments keep the stream alive
      out.push_back(json::parse(frame.substr(6)));
      if (until(out.back())) return out;
    }
  }
  return out;
}

}  // namespace accrue::test
