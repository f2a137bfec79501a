#pragma once
// What a playground run trains and how (the JSON body of POST /api/plan and POST /api/runs), and
// how a client's settings are read and refused.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace playground {

using json = nlohmann::ordered_json;

/// What a run trains and how: the JSON keys are the member names.
struct Settings {
  std::string model = "mlp";                 // "mlp" (the tutorial's) or "cnn"
  std::int64_t micro_batch = 16;             // samples per forward pass
  std::int64_t accumulate = 4;               // micro-batches per optimizer step
  double memory_cap_mib = 0;                 // the model's memory (datasets not counted); 0: no cap
  std::string precision = "float32";         // or .amp()'s "bfloat16", or "float16" with loss scaling
  bool overflow = false;                     // float16: the loss scale starts at 2^40, so the first steps overflow
  bool recompute = false;                    // RecomputePolicy::every(): sqrt(n) segments recomputed in backward
  std::string normalization = "per_window";  // or the tutorials' "per_micro_batch"
  bool uneven = false;  // half the labels hidden (-100, counted for nothing): micro-batches count unequal samples
  double lr = 0.2;                           // SGD's learning rate
  std::string schedule = "constant";         // or "warmup_cosine" (10% warmup) over the epochs' optimizer steps
  std::int64_t epochs = 1;
  std::int64_t max_steps = 0;  // stop after this many optimizer steps; 0: run the epochs
  std::int64_t pace_ms = 0;    // a pause after each micro-batch, to watch it happen
  std::uint64_t seed = 0;

  json to_json() const;
  /// The cap in bytes (0: none).
  std::size_t cap_bytes() const { return static_cast<std::size_t>(memory_cap_mib * 1024 * 1024); }
};

/// A setting that cannot be used, with the message the 400 answer carries.
struct SettingsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The settings in `body` (a JSON object); SettingsError naming the key and what is wrong with it
/// (text where a number belongs, a micro-batch of 0, an accumulation of 10^9, an unknown key). The
/// message describes a client's value by its type and size, never by quoting it whole, and JSON
/// nested deeper than max_settings_depth is refused as it is read.
Settings parse_settings(std::string_view body, std::int64_t training_samples);
inline constexpr int max_settings_depth = 8;

}  // namespace playground
