#pragma once
// Host memory, 64-byte aligned, with the cache of freed blocks of CachingAllocator.

#include "caching_allocator.hpp"

namespace accrue {

class CpuAllocator final : public CachingAllocator {
 public:
  CpuAllocator() : CachingAllocator(Device::cpu()) {}
  ~CpuAllocator() override { release_cached(); }

  /// Blocks larger than this go back to the system when freed rather than into the cache.
  static constexpr std::size_t max_cached_block = std::size_t{64} << 20;
  /// Requests round up to 64 bytes below a page and to whole pages above.
  static std::size_t block_size(std::size_t bytes);

 protected:
  std::size_t round_up(std::size_t bytes) const override { return block_size(bytes); }
  bool keeps(std::size_t block) const override { return block <= max_cached_block; }
  void* system_allocate(std::size_t block) override;
  void system_free(void* ptr) noexcept override;
  std::optional<std::size_t> system_available() const override { return available_system_memory(); }
};

}  // namespace accrue
