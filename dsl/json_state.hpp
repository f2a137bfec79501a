#pragma once
// Reading checkpoint state JSON, and integers out of it. nlohmann's get<int>() casts whatever number it
// finds, and casting a float out of an integer's range is undefined behaviour; a checkpoint is
// input from disk, so every integer goes through json_integer, which refuses anything else.
// (Not installed: it needs nlohmann-json, which users of the library do not.)

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string_view>
#include <utility>

#include "../framework/core/error.hpp"
#include "../framework/core/utf8.hpp"
#include "../framework/serialization/json_text.hpp"

namespace accrue::detail {

template <class T>
T json_integer(const nlohmann::json& j, std::string_view what) {
  if (j.is_number_unsigned()) {
    const auto v = j.get<std::uint64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  } else if (j.is_number_integer()) {
    const auto v = j.get<std::int64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  }
  throw ValueError(fmt::format("{} is {}, not an integer in [{}, {}]", what, json_excerpt(j), std::numeric_limits<T>::min(),
                               std::numeric_limits<T>::max()));
}

/// Reads the saved state `text` of `owner` (a callback): `read(json)` with it parsed. Text that is
/// not JSON, or JSON that does not fit (a key missing, a value of another kind), is a ValueError
/// naming the owner and quoting the start of the text.
template <class Read>
void read_json_state(std::string_view owner, const std::string& text, Read&& read) {
  try {
    std::forward<Read>(read)(parse_json(text, fmt::format("{}: the saved state", owner)));
  } catch (const JsonError& e) {
    throw ValueError(e.what());
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(fmt::format("{}: the saved state {} does not fit ({})", owner, printable_excerpt(text), json_reason(e)));
  }
}

}  // namespace accrue::detail
