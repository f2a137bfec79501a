#include "http_server.hpp"

#include <utility>  // before Asio, whose awaitable.hpp uses std::exchange without it in Boost 1.74

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <fmt/format.h>

#include <accrue/framework/core/error.hpp>
#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>
#include <vector>

namespace playground::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

Response error(int status, std::string_view message) {
  // The message may quote a client's bytes: replace what is not UTF-8 rather than fail to answer.
  return {status, nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"};
}

namespace {

bool loopback(const net::ip::address& a) {
  return a.is_loopback() || (a.is_v6() && a.to_v6().is_v4_mapped() &&
                             net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6()).is_loopback());
}

// An address as a Host header names it: IPv6 in brackets, a v4-mapped address as IPv4.
std::string host_name(const net::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6()).to_string();
  return a.is_v6() ? "[" + a.to_string() + "]" : a.to_string();
}

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string shown(std::string_view s) { return "'" + printable(s) + "'"; }

}  // namespace

std::string query_value(std::string_view query, std::string_view name) {
  const auto hex = [](char c) -> int {
    const char lower = static_cast<char>(c | 0x20);
    return c >= '0' && c <= '9' ? c - '0' : lower >= 'a' && lower <= 'f' ? lower - 'a' + 10 : -1;
  };
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(pair.size() + 1, query.size()));
    const std::size_t equals = pair.find('=');
    if (pair.substr(0, equals) != name) continue;
    std::string value;
    const std::string_view raw = equals == std::string_view::npos ? std::string_view{} : pair.substr(equals + 1);
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size() && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
        value += static_cast<char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2]));
        i += 2;
      } else {
        value += raw[i] == '+' ? ' ' : raw[i];
      }
    }
    return value;
  }
  return {};
}

std::string printable(std::string_view text, std::size_t most) {
  std::string out;
  for (const char c : text.substr(0, most)) {
    const auto b = static_cast<unsigned char>(c);
    out += b < 0x20 || b >= 0x7f ? fmt::format("\\x{:02x}", b) : std::string(1, c);
  }
  return text.size() > most ? out + "..." : out;
}

class Session;

// Who is connected: how many from each address, and who has waited longest for a request, head or
// body (the one to close when a new connection finds a limit reached).
class Connections {
 public:
  // False when a limit is reached and no connection waits for a request; else the connection is
  // counted, and `evicted` is set to the one that must make room (if any).
  bool admit(const std::shared_ptr<Session>& s, const std::string& address, const ServerOptions& o,
             std::shared_ptr<Session>& evicted);
  void leave(Session* s);
  void set_waiting(Session* s, bool waiting);
  std::vector<std::shared_ptr<Session>> all();
  int size() const {
    const std::lock_guard lock{mutex_};
    return static_cast<int>(entries_.size());
  }

 private:
  struct Entry {
    std::weak_ptr<Session> session;
    std::string address;
    std::optional<Clock::time_point> waiting_since;
  };
  mutable std::mutex mutex_;
  std::unordered_map<Session*, Entry> entries_;
  std::unordered_map<std::string, int> per_address_;
};

struct Route {
  Server::Handler handler;
  bool blocks = false;
};

struct Server::Impl {
  explicit Impl(ServerOptions o)
      : options(o),
        acceptor(net::make_strand(io)),
        retry(acceptor.get_executor()),
        handlers(static_cast<std::size_t>(std::max(1, o.handler_threads))) {}

  void accept();
  std::optional<Response> check_head(const bhttp::request<bhttp::string_body>& head, const std::string& remote,
                                     const tcp::endpoint& local) const;
  void shut_down();

  ServerOptions options;
  std::map<std::string, std::map<std::string, Route>> routes;  // path -> method -> route
  std::map<std::string, FeedOpener> streams;
  Connections connections;  // before io: sessions leave it when io's handlers are destroyed
  net::io_context io;
  tcp::acceptor acceptor;
  net::steady_timer retry;
  net::thread_pool handlers;
  std::vector<std::thread> threads;
  std::string host;
  int port = 0;
  bool shut = false;
};

// One connection: requests read one after the other (pipelined ones in order), each answered
// before the next is read; or, after a GET of a stream route, the stream's frames until either
// side closes. Every handler runs on the connection's strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server::Impl& server, tcp::socket socket, std::string remote)
      : server_(server), stream_(std::move(socket)), remote_(std::move(remote)), keep_alive_(stream_.get_executor()) {
    beast::error_code ec;
    local_ = stream_.socket().local_endpoint(ec);
  }
  ~Session() { server_.connections.leave(this); }

  void start() { read_request(); }
  // A new connection found the limits reached with nobody to close: 503, then close.
  void refuse_full() {
    parser_.emplace();
    answer(error(503, "too many connections: try again in a moment"), true);
  }
  // Closes this connection (from any thread) to make room for a new one.
  void evict() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
  }
  // Ends a stream's feed; the server calls it once its threads have stopped.
  void drop_feed() { feed_.reset(); }

 private:
  void read_request() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.header_bytes));
    parser_->body_limit(server_.options.body_bytes);
    server_.connections.set_waiting(this, true);
    stream_.expires_after(server_.options.request_deadline);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_head(ec); });
  }

  // The connection stays evictable until its body has come too: one that sends its head and then
  // its body slowly holds a place as surely as one that is slow with its head.
  void on_head(beast::error_code ec) {
    if (ec) return fail(ec);
    if (std::optional<Response> refusal = server_.check_head(parser_->get(), remote_, local_)) {
      server_.connections.set_waiting(this, false);
      return answer(*refusal, true);  // the body is not read: the connection cannot go on
    }
    if (beast::iequals(parser_->get()[bhttp::field::expect], "100-continue")) {
      out_ = "HTTP/1.1 100 Continue\r\n\r\n";
      return net::async_write(stream_, net::buffer(out_), [self = shared_from_this()](beast::error_code e, std::size_t) {
        if (e) return self->close();
        self->read_body();
      });
    }
    read_body();
  }

  void read_body() {
    bhttp::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->server_.connections.set_waiting(self.get(), false);
      if (ec) return self->fail(ec);
      self->dispatch();
    });
  }

  void fail(beast::error_code ec) {
    if (ec == bhttp::error::body_limit)
      return answer(error(413, fmt::format("the request's body is over {} bytes", server_.options.body_bytes)), true);
    if (ec == bhttp::error::header_limit)
      return answer(error(431, fmt::format("the request's head is over {} bytes", server_.options.header_bytes)), true);
    // The client went away, or did not send its request in time: nobody to answer.
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset || ec == net::error::eof || ec == bhttp::error::partial_message)
      return close();
    answer(error(400, fmt::format("not an HTTP/1.1 request: {}", ec.message())), true);
  }

  void dispatch() {
    const auto& head = parser_->get();
    const std::string_view target = view(head.target());
    const std::size_t question = std::min(target.find('?'), target.size());
    Request request{std::string(head.method_string()), std::string(target.substr(0, question)),
                    std::string(target.substr(std::min(question + 1, target.size()))),
                    std::move(parser_->get().body()), remote_};
    if (const auto stream = server_.streams.find(request.path); stream != server_.streams.end()) {
      if (request.method == "GET") return open_stream(stream->second, request);
      return answer(error(405, fmt::format("{} {}: only GET", shown(request.method), request.path)), false);
    }
    const auto path = server_.routes.find(request.path);
    if (path == server_.routes.end())
      return answer(error(404, fmt::format("{}: no such page here", shown(request.path))), false);
    const auto route = path->second.find(request.method);
    if (route == path->second.end()) {
      std::string allowed;
      for (const auto& [method, _] : path->second) allowed += (allowed.empty() ? "" : ", ") + method;
      return answer(error(405, fmt::format("{} {}: this page takes {}", shown(request.method), request.path, allowed)),
                    false);
    }
    if (!route->second.blocks) return answer(call(route->second.handler, request), false);
    net::post(server_.handlers, [self = shared_from_this(), handler = route->second.handler, request] {
      Response response = call(handler, request);
      net::post(self->stream_.get_executor(), [self, response = std::move(response)] { self->answer(response, false); });
    });
  }

  static Response call(const Server::Handler& handler, const Request& request) {
    try {
      return handler(request);
    } catch (const std::exception& e) {
      return error(500, e.what());
    }
  }

  void answer(const Response& r, bool close_after) {
    response_ = {};
    response_.version(11);
    response_.result(static_cast<unsigned>(r.status));
    response_.set(bhttp::field::content_type, r.content_type);
    response_.set(bhttp::field::cache_control, "no-store");
    response_.set("X-Content-Type-Options", "nosniff");
    response_.body() = r.body;
    const bool keep = !close_after && parser_->get().keep_alive();
    response_.keep_alive(keep);
    response_.prepare_payload();
    stream_.expires_after(server_.options.write_deadline);
    bhttp::async_write(stream_, response_, [self = shared_from_this(), keep](beast::error_code ec, std::size_t) {
      if (ec) return self->close();
      if (!keep) return self->linger();
      self->read_request();
    });
  }

  // Closing a socket with unread bytes resets the connection, and the client may lose the answer
  // it has not read yet (a 413 while it still sends its body): stop sending, read and drop what
  // comes for up to a second or 1 MiB, then close (nginx's lingering close).
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds{1});
    drain(0);
  }
  void drain(std::size_t dropped) {
    stream_.async_read_some(net::buffer(ignored_), [self = shared_from_this(), dropped](beast::error_code ec,
                                                                                        std::size_t n) {
      if (ec || dropped + n > (1u << 20)) return self->close();
      self->drain(dropped + n);
    });
  }

  // ---- event streams ----

  void open_stream(const Server::FeedOpener& open, const Request& request) {
    std::weak_ptr<Session> weak = shared_from_this();
    auto wake = [weak, executor = stream_.get_executor()] {
      net::post(executor, [weak] {
        if (const auto self = weak.lock()) self->pump();
      });
    };
    std::variant<Response, std::unique_ptr<EventFeed>> opened;
    try {
      opened = open(request, std::move(wake));
    } catch (const std::exception& e) {
      opened = error(500, e.what());
    }
    if (auto* refusal = std::get_if<Response>(&opened)) return answer(*refusal, false);
    feed_ = std::move(std::get<std::unique_ptr<EventFeed>>(opened));
    // The stream's body ends when the connection does (no length, no chunks): what any
    // EventSource reads, and curl -N too.
    send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
         "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n" +
         feed_->take());
    watch_for_close();
    keep_stream_alive();
  }

  void pump() {
    if (closed_ || writing_ || !feed_) return;
    if (std::string frames = feed_->take(); !frames.empty()) send(std::move(frames));
  }

  void send(std::string frames) {
    writing_ = true;
    out_ = std::move(frames);
    stream_.expires_after(server_.options.write_deadline);
    net::async_write(stream_, net::buffer(out_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->writing_ = false;
      if (ec) return self->close();
      self->stream_.expires_never();
      self->pump();
    });
  }

  // A page that goes away closes its connection: read until then (what it sends is ignored).
  void watch_for_close() {
    stream_.async_read_some(net::buffer(ignored_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->close();
      self->watch_for_close();
    });
  }

  void keep_stream_alive() {
    keep_alive_.expires_after(server_.options.stream_keep_alive);
    keep_alive_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->closed_) return;
      if (!self->writing_) self->send(":\n\n");
      self->keep_stream_alive();
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    keep_alive_.cancel();
  }

  Server::Impl& server_;
  beast::tcp_stream stream_;
  std::string remote_;
  tcp::endpoint local_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bhttp::response<bhttp::string_body> response_;
  std::unique_ptr<EventFeed> feed_;
  std::string out_;
  std::array<char, 512> ignored_{};
  net::steady_timer keep_alive_;
  bool writing_ = false, closed_ = false;
};

// ---- Connections ----

bool Connections::admit(const std::shared_ptr<Session>& s, const std::string& address, const ServerOptions& o,
                        std::shared_ptr<Session>& evicted) {
  const std::lock_guard lock{mutex_};
  const auto oldest_waiting = [&](bool same_address) {
    auto best = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->second.waiting_since && (!same_address || it->second.address == address) &&
          (best == entries_.end() || *it->second.waiting_since < *best->second.waiting_since))
        best = it;
    return best;
  };
  auto victim = entries_.end();
  if (per_address_[address] >= o.connections_per_address) {
    if ((victim = oldest_waiting(true)) == entries_.end()) return false;
  } else if (static_cast<int>(entries_.size()) >= o.connections) {
    if ((victim = oldest_waiting(false)) == entries_.end()) return false;
  }
  if (victim != entries_.end()) {
    victim->second.waiting_since.reset();  // chosen once
    evicted = victim->second.session.lock();
  }
  entries_[s.get()] = Entry{s, address, std::nullopt};
  ++per_address_[address];
  return true;
}

void Connections::leave(Session* s) {
  const std::lock_guard lock{mutex_};
  const auto it = entries_.find(s);
  if (it == entries_.end()) return;
  if (--per_address_[it->second.address] == 0) per_address_.erase(it->second.address);
  entries_.erase(it);
}

void Connections::set_waiting(Session* s, bool waiting) {
  const std::lock_guard lock{mutex_};
  if (const auto it = entries_.find(s); it != entries_.end())
    it->second.waiting_since = waiting ? std::optional{Clock::now()} : std::nullopt;
}

std::vector<std::shared_ptr<Session>> Connections::all() {
  const std::lock_guard lock{mutex_};
  std::vector<std::shared_ptr<Session>> out;
  for (const auto& [_, e] : entries_)
    if (auto s = e.session.lock()) out.push_back(std::move(s));
  return out;
}

// ---- Server ----

void Server::Impl::accept() {
  acceptor.async_accept(net::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;  // closed
    if (ec) {  // out of file descriptors, or the like: try again in a moment, without spinning
      retry.expires_after(std::chrono::milliseconds{100});
      return retry.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
    }
    beast::error_code e;
    const tcp::endpoint remote = socket.remote_endpoint(e);
    const std::string address = e ? "unknown" : remote.address().to_string();
    auto session = std::make_shared<Session>(*this, std::move(socket), address);
    std::shared_ptr<Session> evicted;
    if (connections.admit(session, address, options, evicted)) {
      if (evicted) evicted->evict();
      session->start();
    } else {
      session->refuse_full();
    }
    accept();
  });
}

std::optional<Response> Server::Impl::check_head(const bhttp::request<bhttp::string_body>& head,
                                                 const std::string& remote, const tcp::endpoint& local) const {
  beast::error_code ec;
  const net::ip::address from = net::ip::make_address(remote, ec);
  if (!options.remote_allowed && (ec || !loopback(from)))
    return error(403, fmt::format("the playground answers loopback only (this request came from {}); start it with "
                                  "--host 0.0.0.0 to open it to other machines",
                                  remote));
  // Host names this server, or the request came from a page of another name (DNS rebinding).
  const std::string given = lower(view(head[bhttp::field::host]));
  std::vector<std::string> names = {"127.0.0.1", "localhost", "[::1]", lower(host_name(local.address()))};
  if (!host.empty()) names.push_back(lower(host.find(':') != std::string::npos ? "[" + host + "]" : host));
  const bool named = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
    return given == fmt::format("{}:{}", n, port) || (port == 80 && given == n);
  });
  if (!named)
    return error(403, fmt::format("Host {} does not name this server ({}:{}): requests from pages of other names are "
                                  "refused",
                                  shown(view(head[bhttp::field::host])), host_name(local.address()), port));
  // A page of another site may not start or stop runs (browsers send Origin with cross-site POSTs).
  const std::string_view origin = view(head[bhttp::field::origin]);
  if (head.method() == bhttp::verb::post && !origin.empty() && lower(origin) != "http://" + given)
    return error(403, fmt::format("requests from the page {} are refused", shown(origin)));
  return std::nullopt;
}

void Server::Impl::shut_down() {
  if (shut) return;
  shut = true;
  io.stop();
  for (std::thread& t : threads) t.join();
  handlers.join();
  // Nothing runs now: feeds end here, before the io_context their wake-ups post to.
  for (const std::shared_ptr<Session>& s : connections.all()) s->drop_feed();
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(options)) {}

Server::~Server() { impl_->shut_down(); }

void Server::route(std::string method, std::string path, Handler handler, bool blocks) {
  impl_->routes[std::move(path)][std::move(method)] = Route{std::move(handler), blocks};
}

void Server::route_stream(std::string path, FeedOpener open) { impl_->streams[std::move(path)] = std::move(open); }

int Server::bind(const std::string& host, int port) {
  beast::error_code ec;
  tcp::resolver resolver{impl_->io};
  const auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service, ec);
  if (ec || results.empty())
    throw accrue::IoError(fmt::format("cannot listen on {} port {}: {}", host, port, ec ? ec.message() : "no address"));
  const tcp::endpoint endpoint = results.begin()->endpoint();
  tcp::acceptor& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw accrue::IoError(fmt::format("cannot listen on {} port {}: {}", host, port, ec.message()));
  impl_->host = host;
  impl_->port = a.local_endpoint().port();
  return impl_->port;
}

void Server::run() {
  impl_->accept();
  for (int i = 1; i < std::max(1, impl_->options.network_threads); ++i) impl_->threads.emplace_back([this] { impl_->io.run(); });
  impl_->io.run();
}

void Server::stop() { impl_->io.stop(); }

int Server::connections() const { return impl_->connections.size(); }

}  // namespace playground::http
