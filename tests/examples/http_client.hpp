#pragma once
// A blocking HTTP/1.1 client for the playground's tests: requests as curl or a page sends them, and
// any bytes at all, as a client that misbehaves on purpose sends them. POSIX sockets, with Beast's
// parser for the answers.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/beast/http.hpp>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace accrue::test::http {

namespace bhttp = boost::beast::http;

struct Reply {
  int status = 0;
  std::string body;
  bool keep_alive = true;
  nlohmann::ordered_json json() const { return nlohmann::ordered_json::parse(body); }
};

/// The text of a request: `extra` holds more header lines, each ending in "\r\n".
inline std::string request(std::string_view method, std::string_view path, int port, std::string_view body = "",
                           std::string_view extra = "") {
  std::string r = std::string(method) + " " + std::string(path) + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                  std::to_string(port) + "\r\n" + std::string(extra);
  if (!body.empty() || method == "POST")
    r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + std::string(body);
}

/// One connection to 127.0.0.1:port; a read waits at most `timeout` for each part of an answer.
class Connection {
 public:
  explicit Connection(int port, std::chrono::milliseconds timeout = std::chrono::seconds{30})
      : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)), port_(port), timeout_(timeout) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
      throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
  }
  ~Connection() { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

  /// False when the bytes could not all be sent (the server closed the connection).
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// The next response; none when the connection closed first or nothing came in time.
  std::optional<Reply> read() {
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    parser.eager(true);
    for (;;) {
      if (!pending_.empty()) {
        boost::system::error_code ec;
        const std::size_t used = parser.put(boost::asio::buffer(pending_), ec);
        pending_.erase(0, used);
        if (ec && ec != bhttp::error::need_more) return std::nullopt;
        if (parser.is_done()) return reply(parser);
        if (used > 0 && !ec) continue;
      }
      const std::string more = receive();
      if (more.empty()) {
        boost::system::error_code ec;
        if (closed_) parser.put_eof(ec);  // a body that ends with the connection
        return closed_ && !ec && parser.is_done() ? std::optional{reply(parser)} : std::nullopt;
      }
      pending_ += more;
    }
  }

  /// Sends a request and reads its answer.
  std::optional<Reply> ask(std::string_view method, std::string_view path, std::string_view body = "",
                           std::string_view extra = "") {
    if (!send(request(method, path, port_, body, extra))) return std::nullopt;
    return read();
  }

  /// The bytes that come next (those already received first); empty when the connection closed or
  /// nothing came in time.
  std::string read_some() {
    if (!pending_.empty()) return std::exchange(pending_, {});
    return receive();
  }

  /// Whether the server closes the connection within the timeout (what it sends meanwhile is
  /// dropped); false when the connection is still open then.
  bool closed_by_server() {
    pending_.clear();
    while (!receive().empty()) {
    }
    return closed_;
  }

 private:
  static Reply reply(const bhttp::response_parser<bhttp::string_body>& parser) {
    return {static_cast<int>(parser.get().result_int()), parser.get().body(), parser.get().keep_alive()};
  }

  // Bytes as they come; empty at the end of the stream (closed_ set) or after the timeout.
  std::string receive() {
    pollfd p{fd_, POLLIN, 0};
    if (closed_ || ::poll(&p, 1, static_cast<int>(timeout_.count())) <= 0) return {};
    std::string out(65536, '\0');
    const ssize_t n = ::recv(fd_, out.data(), out.size(), 0);
    if (n <= 0) {
      closed_ = true;
      return {};
    }
    out.resize(static_cast<std::size_t>(n));
    return out;
  }

  int fd_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::string pending_;
  bool closed_ = false;
};

}  // namespace accrue::test::http
