#pragma once
// Choosing among a library's ranked algorithms (cuDNN's *_v7 convolution heuristics), host-only so
// that CPU tests check the rule the CUDA backend follows.

#include <cstddef>
#include <optional>
#include <span>

namespace accrue::kernels::common {

/// One entry of a library's heuristics, in its order: the algorithm, whether the library can run
/// it here, and its math mode. (Its own workspace estimate is not used: the size is asked for.)
struct AlgorithmCandidate {
  int algorithm;
  bool supported;
  int math;
};

struct AlgorithmChoice {
  int algorithm;
  std::size_t workspace;  // as the library reports it for this algorithm, not the estimate
};

/// The first supported candidate in a math mode of `allowed_math` whose workspace, asked of the
/// library by `workspace_of(algorithm)` (an optional size: none when the library refuses it),
/// fits under `cap`; when none does, `fallback` (an algorithm that needs no workspace) if the
/// library gives it a workspace under the cap; else none.
template <class WorkspaceOf>
std::optional<AlgorithmChoice> choose_algorithm(std::span<const AlgorithmCandidate> candidates,
                                                std::span<const int> allowed_math, std::size_t cap, int fallback,
                                                WorkspaceOf&& workspace_of) {
  const auto allowed = [&](int math) {
    for (int m : allowed_math)
      if (m == math) return true;
    return false;
  };
  for (const AlgorithmCandidate& c : candidates) {
    if (!c.supported || !allowed(c.math)) continue;
    const std::optional<std::size_t> bytes = workspace_of(c.algorithm);
    if (bytes && *bytes <= cap) return AlgorithmChoice{c.algorithm, *bytes};
  }
  if (const std::optional<std::size_t> bytes = workspace_of(fallback); bytes && *bytes <= cap)
    return AlgorithmChoice{fallback, *bytes};
  return std::nullopt;
}

}  // namespace accrue::kernels::common
