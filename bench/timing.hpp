#pragma once
// Timing for the micro-benchmarks: the best of five rounds, each the mean of `reps` calls after one
// warm-up call, so that a slow moment of the machine does not count against the code; and the flags
// of the benchmarks that time PyTorch beside Accrue.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace accrue::bench {

/// The options of a benchmark that times PyTorch beside Accrue: --reps (what a rep is, `reps_are`),
/// --python (the Python with torch) and --no-pytorch.
inline void add_comparison_options(CLI::App& app, int& reps, const std::string& reps_are, std::string& python,
                                   bool& no_pytorch) {
  app.add_option("--reps", reps, reps_are)->check(CLI::PositiveNumber);
  app.add_option("--python", python, "Python with torch (Debian's python3-torch)");
  app.add_flag("--no-pytorch", no_pytorch, "Time Accrue only");
}

inline double best_seconds(int reps, const std::function<void()>& f) {
  f();
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    const auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count() / reps);
  }
  return best;
}

/// best_seconds of each of `fs`, their rounds interleaved (round 1 of each, then round 2 of each...),
/// so that the machine's slow and fast moments fall on all of them alike.
inline std::vector<double> best_seconds_alternating(int reps, const std::vector<std::function<void()>>& fs) {
  for (const auto& f : fs) f();
  std::vector<double> best(fs.size(), 1e9);
  for (int round = 0; round < 5; ++round)
    for (std::size_t i = 0; i < fs.size(); ++i) {
      const auto t = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) fs[i]();
      best[i] = std::min(best[i], std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count() / reps);
    }
  return best;
}

/// The median of `v` (0 when empty).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// A training configuration written "BxK" or "BxKamp": micro-batches of B accumulated K per
/// optimizer step (K = 1 when "xK" is left out), under mixed precision with "amp".
struct BatchConfig {
  std::string name;
  std::int64_t batch = 1;
  int accumulate = 1;
  bool amp = false;
};

inline BatchConfig parse_batch_config(const std::string& name) {
  std::string shape = name;
  const bool amp = shape.size() > 3 && shape.compare(shape.size() - 3, 3, "amp") == 0;
  if (amp) shape = shape.substr(0, shape.size() - 3);
  const auto x = shape.find('x');
  return {name, std::stoll(shape.substr(0, x)), x == std::string::npos ? 1 : std::stoi(shape.substr(x + 1)), amp};
}

}  // namespace accrue::bench
