#pragma once
// A small HTTP/1.1 server for the playground, on Boost.Beast and Asio, whose limits hold against
// clients that misbehave on purpose. Connections are served asynchronously on a few threads, so a
// connection that sends slowly holds no thread; every limit is explicit:
//   - a request (head and body) must arrive within `request_deadline`, counted from when the
//     server starts waiting for it (also between the requests of a kept-alive connection);
//   - a head of at most `header_bytes` and a body of at most `body_bytes`, however it is framed
//     (Content-Length or chunked): past them, 431 or 413 and the connection closes;
//   - at most `connections_per_address` connections from one address and `connections` in all:
//     a new one past a limit closes the connection that has waited longest for its request (head
//     or body), so a crowd of slow clients cannot lock others, or their own address, out; 503 when
//     none waits;
//   - `Host` must name the address the server listens on with its port (127.0.0.1, localhost,
//     [::1], the --host given, or the address the client reached): a page of a site whose name
//     resolves to 127.0.0.1 (DNS rebinding) is refused; so is a POST whose Origin is another site,
//     and, unless `remote_allowed`, a client that is not on loopback.
// Pipelined requests are answered one after the other, in order. Errors are JSON: {"error": ...}.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace playground::http {

struct Request {
  std::string method;  // "GET", "POST"
  std::string path;    // the target without its query
  std::string query;   // what follows the '?', as it came
  std::string body;
  std::string remote;  // the client's address
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

/// {"error": message} with `status`; the message may hold any bytes (invalid UTF-8 is replaced).
Response error(int status, std::string_view message);

/// The value of `name` in a query ("w=abc&token=x"), percent-decoded; empty when absent.
std::string query_value(std::string_view query, std::string_view name);

/// A client's text for a message: at most `most` bytes, each byte that is not printable ASCII
/// (a NUL, a newline, UTF-8) as \xNN, and "..." when it was longer.
std::string printable(std::string_view text, std::size_t most = 60);

/// The frames of an open event stream (Server-Sent Events).
class EventFeed {
 public:
  virtual ~EventFeed() = default;
  /// The frames ready now ("data: ...\n\n" each, as one text), empty when none; never blocks.
  virtual std::string take() = 0;
};

struct ServerOptions {
  std::size_t header_bytes = 8 * 1024;
  std::size_t body_bytes = 64 * 1024;
  std::chrono::milliseconds request_deadline{10'000};
  /// A response (or an event) not taken by the client in this time ends the connection.
  std::chrono::milliseconds write_deadline{30'000};
  /// An event stream with nothing new sends a comment this often, so proxies keep it open.
  std::chrono::milliseconds stream_keep_alive{5'000};
  int connections_per_address = 128;
  int connections = 512;
  /// Threads of the network, and of the handlers that may block.
  int network_threads = 2, handler_threads = 4;
  /// Answer clients that are not on loopback.
  bool remote_allowed = false;
};

class Server {
 public:
  using Handler = std::function<Response(const Request&)>;
  /// Opens an event stream: a refusal, or the feed. `wake`, callable from any thread until the
  /// feed is destroyed, says that take() may have frames.
  using FeedOpener =
      std::function<std::variant<Response, std::unique_ptr<EventFeed>>(const Request&, std::function<void()> wake)>;

  explicit Server(ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Answers `method path` with `handler`. `blocks`: the handler may take long (it then runs on
  /// the handler threads, and other requests are answered meanwhile); otherwise it runs on the
  /// network thread and must return at once.
  void route(std::string method, std::string path, Handler handler, bool blocks = false);
  /// Answers GET `path` with an event stream.
  void route_stream(std::string path, FeedOpener open);

  /// Listens on host:port (port 0: a free one) and returns the port. Throws accrue::IoError.
  int bind(const std::string& host, int port);
  /// Serves until stop(); call once, after bind.
  void run();
  /// Ends run() (the connections close when the server is destroyed). Callable from any thread,
  /// also before run().
  void stop();

  /// Connections open now (for tests).
  int connections() const;

  struct Impl;  // what http_server.cpp keeps

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace playground::http
