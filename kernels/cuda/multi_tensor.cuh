#pragma once
// Multi-tensor launches: one launch covers many tensors (all the parameters of a model, or all
// their gradients), as PyTorch's foreach/fused optimizers do, instead of one launch per tensor.
// The pointers travel in the kernel's parameters (under the 4 KiB every CUDA version accepts);
// common::plan_multi_tensor (common/multi_tensor.hpp) splits long lists into several launches.
// Used by the optimizer updates, unscaling, the global norm and clipping.

#include <array>
#include <span>
#include <type_traits>
#include <vector>

#include "../common/multi_tensor.hpp"
#include "launch.cuh"

namespace accrue::kernels::cuda {

constexpr int table_tensors = 24;
constexpr int table_blocks = 320;
constexpr int multi_threads = 512;
constexpr std::int64_t chunk_elements = 65536;

/// Up to table_tensors tensors of Depth pointers each (param, grad, state...), and per block its
/// tensor's slot and chunk.
template <int Depth>
struct TensorTable {
  void* ptr[Depth][table_tensors];
  std::int64_t n[table_tensors];
  int block_chunk[table_blocks];
  unsigned char block_slot[table_blocks];
};
static_assert(table_tensors <= 255, "slots are stored in a byte");

// The range [begin, end) of block b's chunk in its tensor.
template <int Depth>
__device__ void chunk_range(const TensorTable<Depth>& t, std::int64_t* begin, std::int64_t* end, int* slot) {
  *slot = t.block_slot[blockIdx.x];
  *begin = static_cast<std::int64_t>(t.block_chunk[blockIdx.x]) * chunk_elements;
  const std::int64_t stop = *begin + chunk_elements;
  *end = stop < t.n[*slot] ? stop : t.n[*slot];
}

// Runs `launch` over a list of tensors described by `pointers[tensor][depth]` and `sizes`.
template <int Depth, class Launch>
void for_each_launch(std::span<const std::int64_t> sizes, const std::vector<std::array<void*, Depth>>& pointers,
                     Launch&& launch) {
  const auto launches = common::plan_multi_tensor(sizes, table_tensors, table_blocks, chunk_elements);
  for (const common::MultiTensorLaunch& l : launches) {
    TensorTable<Depth> table{};
    for (std::size_t s = 0; s < l.tensors.size(); ++s) {
      const auto t = static_cast<std::size_t>(l.tensors[s]);
      for (int d = 0; d < Depth; ++d) table.ptr[d][s] = pointers[t][static_cast<std::size_t>(d)];
      table.n[s] = sizes[t];
    }
    for (std::size_t b = 0; b < l.block_slot.size(); ++b) {
      table.block_slot[b] = static_cast<unsigned char>(l.block_slot[b]);
      table.block_chunk[b] = static_cast<int>(l.block_chunk[b]);
    }
    launch(table, static_cast<unsigned>(l.block_slot.size()));
  }
}

}  // namespace accrue::kernels::cuda
