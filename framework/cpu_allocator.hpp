#pragma once
// Host memory with a cache of freed blocks. A training step allocates the same sizes every
// iteration; reusing blocks avoids a round trip to mmap and the page faults of fresh pages,
// which cost more than small kernels themselves.

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "accrue/framework/memory.hpp"

namespace accrue {

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() : Allocator(Device::cpu()) {}
  ~CpuAllocator() override;

  /// Blocks larger than this go back to the system when freed rather than into the cache.
  static constexpr std::size_t max_cached_block = std::size_t{64} << 20;

 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* ptr, std::size_t bytes) noexcept override;
  std::size_t reserved_bytes() const override { return reserved_; }
  void release_cached() noexcept override;

 private:
  static std::size_t block_size(std::size_t bytes);

  std::unordered_map<std::size_t, std::vector<void*>> free_blocks_;
  std::size_t reserved_ = 0;
};

}  // namespace accrue
