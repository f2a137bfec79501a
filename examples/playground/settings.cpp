#include "settings.hpp"

#include <cmath>
#include <fmt/format.h>

#include <accrue/framework/serialization/json_text.hpp>
#include "http_server.hpp"

namespace playground {

namespace {

constexpr std::int64_t largest_micro_batch = 4096, largest_accumulation = 4096;

// A client's value in a message: its size, never the whole of what a client sends.
std::string describe(const nlohmann::json& value) { return accrue::json_excerpt(value); }

std::int64_t whole(const nlohmann::json& value, std::string_view key, std::int64_t low, std::int64_t high) {
  const bool integral = value.is_number_integer() || value.is_number_unsigned();
  if (!integral || (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(high)) ||
      value.get<std::int64_t>() < low || value.get<std::int64_t>() > high)
    throw SettingsError(fmt::format("{}: {} is not a whole number from {} to {}", key, describe(value), low, high));
  return value.get<std::int64_t>();
}

double number(const nlohmann::json& value, std::string_view key, double low, double high, bool low_included) {
  const double v = value.is_number() ? value.get<double>() : NAN;
  if (!std::isfinite(v) || v < low || (!low_included && v == low) || v > high)
    throw SettingsError(fmt::format("{}: {} is not a number from {} ({}) to {}", key, describe(value), low,
                                    low_included ? "included" : "excluded", high));
  return v;
}

bool boolean(const nlohmann::json& value, std::string_view key) {
  if (!value.is_boolean()) throw SettingsError(fmt::format("{}: {} is not true or false", key, describe(value)));
  return value.get<bool>();
}

std::string one_of(const nlohmann::json& value, std::string_view key, std::initializer_list<std::string_view> choices) {
  std::string names;
  for (std::string_view c : choices) {
    if (value.is_string() && value.get<std::string>() == c) return std::string{c};
    names += (names.empty() ? "" : ", ") + std::string{c};
  }
  throw SettingsError(fmt::format("{}: {} is not one of {}", key, describe(value), names));
}

// The body as JSON, nested at most max_settings_depth deep; SettingsError with the reason, which
// names the field (and never quotes the client's bytes).
nlohmann::json parse_json(std::string_view body) {
  try {
    return accrue::parse_json(body.empty() ? std::string_view{"{}"} : body, "the settings", max_settings_depth);
  } catch (const accrue::JsonError& e) {
    throw SettingsError(e.reason().starts_with("nested") ? "the settings are " + e.reason()
                                                          : "the settings are not JSON: " + e.reason());
  }
}

}  // namespace

json Settings::to_json() const {
  return {{"model", model},
          {"micro_batch", micro_batch},
          {"accumulate", accumulate},
          {"memory_cap_mib", memory_cap_mib},
          {"precision", precision},
          {"overflow", overflow},
          {"recompute", recompute},
          {"normalization", normalization},
          {"uneven", uneven},
          {"lr", lr},
          {"schedule", schedule},
          {"epochs", epochs},
          {"max_steps", max_steps},
          {"pace_ms", pace_ms},
          {"seed", seed}};
}

Settings parse_settings(std::string_view body, std::int64_t training_samples) {
  const nlohmann::json j = parse_json(body);
  if (!j.is_object()) throw SettingsError(fmt::format("the settings must be a JSON object, got {}", describe(j)));
  Settings s;
  const std::string known =
      "model, micro_batch, accumulate, memory_cap_mib, precision, overflow, recompute, normalization, uneven, lr, "
      "schedule, epochs, max_steps, pace_ms, seed";
  for (const auto& [key, value] : j.items()) {
    if (key == "model")
      s.model = one_of(value, key, {"mlp", "cnn"});
    else if (key == "micro_batch")
      s.micro_batch = whole(value, key, 1, std::min(largest_micro_batch, training_samples));
    else if (key == "accumulate")
      s.accumulate = whole(value, key, 1, largest_accumulation);
    else if (key == "memory_cap_mib") {
      s.memory_cap_mib = number(value, key, 0, 1 << 20, true);
      if (s.memory_cap_mib > 0 && s.cap_bytes() == 0)
        throw SettingsError(fmt::format("memory_cap_mib: {} MiB is less than one byte; 0 means no cap", describe(value)));
    } else if (key == "precision")
      s.precision = one_of(value, key, {"float32", "bfloat16", "float16"});
    else if (key == "overflow")
      s.overflow = boolean(value, key);
    else if (key == "uneven")
      s.uneven = boolean(value, key);
    else if (key == "recompute")
      s.recompute = boolean(value, key); else if (key == "normalization")
      s.normalization = one_of(value, key, {"per_window", "per_micro_batch"});
    else if (key == "lr")
      s.lr = number(value, key, 0, 10, false);
    else if (key == "schedule")
      s.schedule = one_of(value, key, {"constant", "warmup_cosine"});
    else if (key == "epochs")
      s.epochs = whole(value, key, 1, 20);
    else if (key == "max_steps")
      s.max_steps = whole(value, key, 0, 1'000'000);
    else if (key == "pace_ms")
      s.pace_ms = whole(value, key, 0, 2000);
    else if (key == "seed")
      s.seed = static_cast<std::uint64_t>(whole(value, key, 0, std::int64_t{1} << 53));
    else
      throw SettingsError(fmt::format("unknown setting '{}'; the settings are {}", http::printable(key, 40), known));
  }
  if (s.micro_batch * s.accumulate > training_samples)
    throw SettingsError(fmt::format("micro_batch x accumulate = {} x {} = {} is more than the {} training samples",
                                    s.micro_batch, s.accumulate, s.micro_batch * s.accumulate, training_samples));
  return s;
}

}  // namespace playground
