#include "options_struct.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "../core/error.hpp"

namespace accrue::optim {
namespace {

// Whether `v` lies in `range`, and the range as an error writes it.
std::pair<bool, std::string_view> in_range(double v, OptionRange range) {
  switch (range) {
    case OptionRange::learning_rate: return {std::isfinite(v) && v >= 0.0, ">= 0"};
    case OptionRange::at_least_zero: return {v >= 0.0, ">= 0"};
    case OptionRange::above_zero: return {v > 0.0, "> 0"};
    case OptionRange::below_one: return {v >= 0.0 && v < 1.0, "in [0, 1)"};
    case OptionRange::up_to_one: return {v >= 0.0 && v <= 1.0, "in [0, 1]"};
  }
  return {false, "in its range"};
}

}  // namespace

void check_options(std::string_view optimizer, std::initializer_list<OptionCheck> options) {
  for (const OptionCheck& o : options) {
    const auto [inside, range] = in_range(o.value, o.range);
    ACCRUE_CHECK(inside, "{}: {} must be {}, got {}", optimizer, o.name, range, o.value);
  }
}

ShownOption::ShownOption(std::string_view name, double value, double default_value)
    : text(value != default_value ? fmt::format(", {}={:g}", name, value) : "") {}

ShownOption::ShownOption(std::string_view name, const std::array<double, 2>& value,
                         const std::array<double, 2>& default_value)
    : text(value != default_value ? fmt::format(", {}=({:g}, {:g})", name, value[0], value[1]) : "") {}

ShownOption::ShownOption(std::string_view name, bool value, bool default_value)
    : text(value != default_value ? fmt::format(", {}={}", name, value ? "True" : "False") : "") {}

std::string options_str(std::string_view optimizer, double lr, std::initializer_list<ShownOption> options,
                        std::string_view tail) {
  std::string s = fmt::format("{}(lr={:g}", optimizer, lr);
  for (const ShownOption& o : options) s += o.text;
  return s + std::string(tail) + ")";
}

}  // namespace accrue::optim
