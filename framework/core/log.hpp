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

namespace detail {
// What log::info and the others are: a message at `At`, formatted only when that level is shown.
template <Level At>
struct LevelWriter {
  template <class... Args>
  void operator()(fmt::format_string<Args...> f, Args&&... args) const {
    if (level() <= At) write(At, fmt::format(f, std::forward<Args>(args)...));
  }
};
}  // namespace detail

/// log::info("{} steps", n): a message at that level, formatted as fmt::format does.
inline constexpr detail::LevelWriter<Level::debug> debug{};
inline constexpr detail::LevelWriter<Level::info> info{};
inline constexpr detail::LevelWriter<Level::warning> warning{};
inline constexpr detail::LevelWriter<Level::error> error{};

}  // namespace accrue::log
