#pragma once
// GPU memory with the cache of freed blocks of CachingAllocator, counted like host memory.
// cudaFree waits for the whole device, so blocks are kept. Every kernel on a device runs on one
// stream, in order, so a block freed by a queued kernel can be reused at once: the next user's
// kernels run after it. In a build without the CUDA backend no GPU device can be made, so none is used.

#include "caching_allocator.hpp"

namespace accrue {

class CudaAllocator final : public CachingAllocator {
 public:
  explicit CudaAllocator(Device device) : CachingAllocator(device) {}
  ~CudaAllocator() override { release_cached(); }

  /// Requests round up to 512 bytes below 1 MiB and to 2 MiB above, so nearby sizes share blocks.
  static std::size_t block_size(std::size_t bytes);

 protected:
  std::size_t round_up(std::size_t bytes) const override { return block_size(bytes); }
  void* system_allocate(std::size_t block) override;
  void system_free(void* ptr) noexcept override;
};

/// The caching allocator of CUDA device `index` (created on first use).
Allocator& cuda_allocator(int index);

}  // namespace accrue
