#pragma once
// What an optimizer's options struct (optim::SGD, optim::Lion) writes its validate() and str() with:
// each option once, with its range or its default, instead of a check or a format of its own.

#include <array>
#include <initializer_list>
#include <string>
#include <string_view>

namespace accrue::optim {

/// The range an option must lie in.
enum class OptionRange {
  learning_rate,  // finite, >= 0
  at_least_zero,
  above_zero,
  below_one,  // [0, 1): a decay, a momentum
  up_to_one,  // [0, 1]
};
struct OptionCheck {
  std::string_view name;
  double value;
  OptionRange range;
};
/// validate(): a ValueError "LARS: eps must be >= 0, got -1" for the first option out of its range.
void check_options(std::string_view optimizer, std::initializer_list<OptionCheck> options);

/// An option as str() writes it, as PyTorch's repr would ("momentum=0.9", "betas=(0.9, 0.99)",
/// "nesterov=True"), shown only when it differs from the default.
struct ShownOption {
  ShownOption(std::string_view name, double value, double default_value);
  ShownOption(std::string_view name, const std::array<double, 2>& value, const std::array<double, 2>& default_value);
  ShownOption(std::string_view name, bool value, bool default_value);
  std::string text;  // ", name=value", or empty at the default
};
/// str(): "SGD(lr=0.001, momentum=0.9)", the options that differ from their defaults in order, then
/// `tail` (", exclude=...").
std::string options_str(std::string_view optimizer, double lr, std::initializer_list<ShownOption> options,
                        std::string_view tail = {});

}  // namespace accrue::optim
