#pragma once
// GPU memory with a cache of freed blocks, counted like host memory. cudaMalloc and cudaFree are
// slow and cudaFree waits for the whole device, so freed blocks are kept by size and handed to
// the next request of that size. Every kernel on a device runs on one stream, in order, so a block
// freed by a queued kernel can be reused at once: the next user's kernels run after it.
// Built only with the CUDA backend.

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "accrue/framework/memory.hpp"

namespace accrue {

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(Device device) : Allocator(device) {}
  ~CudaAllocator() override;

  /// Requests round up to 512 bytes below 1 MiB and to 2 MiB above, so nearby sizes share blocks.
  static std::size_t block_size(std::size_t bytes);

 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* ptr, std::size_t bytes) noexcept override;
  std::size_t reserved_bytes() const override { return reserved_; }
  void release_cached() noexcept override;

 private:
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks_;
  std::size_t reserved_ = 0;
};

/// The caching allocator of CUDA device `index` (created on first use).
Allocator& cuda_allocator(int index);

}  // namespace accrue
