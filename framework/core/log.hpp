#pragma once
// One logger for the library: messages go to stderr with their level, so that program output
// (progress, results) on stdout stays clean. The level comes from ACCRUE_LOG_LEVEL
// (debug, info, warning, error, off; default info) or set_log_level().

#include <fmt/format.h>

#include <functional>
#include <string_view>

namespace accrue::log {

enum class Level : int { debug = 0, info = 1, warning = 2, error = 3, off = 4 };

void set_level(Level level);
Level level();
void write(Level level, std::string_view message);

/// Where messages go: stderr by default; a sink receives them instead (an empty one restores
/// stderr). For redirecting logs into an application's own, and for tests.
using Sink = std::function<void(Level, std::string_view)>;
void set_sink(Sink sink);

template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::debug) write(Level::debug, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::info) write(Level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void warning(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::warning) write(Level::warning, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::error) write(Level::error, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace accrue::log
