#include "log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace accrue::log {
namespace {

Level level_from_env() {
  const char* env = std::getenv("ACCRUE_LOG_LEVEL");
  if (env == nullptr) return Level::info;
  const std::string_view v{env};
  if (v == "debug") return Level::debug;
  if (v == "info") return Level::info;
  if (v == "warning" || v == "warn") return Level::warning;
  if (v == "error") return Level::error;
  if (v == "off" || v == "none") return Level::off;
  std::fprintf(stderr, "[accrue warning] ACCRUE_LOG_LEVEL=%s is not one of debug, info, warning, error, off; using info\n",
               env);
  return Level::info;
}

std::atomic<Level>& current() {
  static std::atomic<Level> value{level_from_env()};
  return value;
}

}  // namespace

void set_level(Level l) { current().store(l); }
Level level() { return current().load(std::memory_order_relaxed); }

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}

Sink& current_sink() {
  static Sink sink;
  return sink;
}

void set_sink(Sink sink) {
  const std::lock_guard lock{sink_mutex()};
  current_sink() = std::move(sink);
}

void write(Level l, std::string_view message) {
  static constexpr const char* names[] = {"debug", "info", "warning", "error"};
  const std::lock_guard lock{sink_mutex()};
  if (current_sink()) {
    current_sink()(l, message);
    return;
  }
  std::fprintf(stderr, "[accrue %s] %.*s\n", names[static_cast<int>(l)], static_cast<int>(message.size()),
               message.data());
  std::fflush(stderr);
}

}  // namespace accrue::log
