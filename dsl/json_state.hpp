#pragma once
// Reading integers out of checkpoint state JSON. nlohmann's get<int>() casts whatever number it
// finds, and casting a float out of an integer's range is undefined behaviour; a checkpoint is
// input from disk, so every integer goes through json_integer, which refuses anything else.
// (Not installed: it needs nlohmann-json, which users of the library do not.)

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string_view>
#include <utility>

#include "../framework/core/error.hpp"
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

}  // namespace accrue::detail
