#pragma once
// Timing for the micro-benchmarks: the best of five rounds, each the mean of `reps` calls after one
// warm-up call, so that a slow moment of the machine does not count against the code.

#include <algorithm>
#include <chrono>
#include <functional>

namespace accrue::bench {

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

}  // namespace accrue::bench
