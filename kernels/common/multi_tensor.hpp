#pragma once
// How the CUDA backend's multi-tensor kernels (optimizer updates, the global gradient norm,
// unscaling) cover a list of tensors in few launches: each launch takes up to `max_tensors`
// tensors and `max_blocks` blocks, each block one chunk of one tensor. Host-only planning, kept
// here so that CPU tests check that every element is covered exactly once.

#include <cstdint>
#include <span>
#include <vector>

namespace accrue::kernels::common {

struct MultiTensorLaunch {
  /// Indices into the caller's list of the tensors this launch covers; slot s is tensors[s].
  std::vector<int> tensors;
  /// Per block: the slot of its tensor and the chunk within it.
  std::vector<int> block_slot;
  std::vector<std::int64_t> block_chunk;
};

inline std::vector<MultiTensorLaunch> plan_multi_tensor(std::span<const std::int64_t> sizes, int max_tensors,
                                                        int max_blocks, std::int64_t chunk) {
  std::vector<MultiTensorLaunch> launches;
  MultiTensorLaunch current;
  auto flush = [&] {
    if (!current.block_slot.empty()) launches.push_back(std::move(current));
    current = {};
  };
  for (int t = 0; t < static_cast<int>(sizes.size()); ++t) {
    const std::int64_t n = sizes[static_cast<std::size_t>(t)];
    if (n == 0) continue;
    const std::int64_t chunks = (n + chunk - 1) / chunk;
    for (std::int64_t c = 0; c < chunks; ++c) {
      // A tensor continues in the next launch when this one is full.
      if (static_cast<int>(current.block_slot.size()) == max_blocks) flush();
      if (current.tensors.empty() || current.tensors.back() != t) {
        if (static_cast<int>(current.tensors.size()) == max_tensors) flush();
        current.tensors.push_back(t);
      }
      current.block_slot.push_back(static_cast<int>(current.tensors.size()) - 1);
      current.block_chunk.push_back(c);
    }
  }
  flush();
  return launches;
}

}  // namespace accrue::kernels::common
