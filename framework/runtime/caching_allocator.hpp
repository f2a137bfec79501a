#pragma once
// An allocator that keeps freed blocks by size and hands them to the next request of that size.
// A training step allocates the same sizes every iteration, and the system's allocation is slow
// on every device (mmap and page faults on the host, cudaMalloc and a device-wide cudaFree on a
// GPU). The backends say how sizes round and how blocks come from and go back to the system.

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "../core/memory.hpp"

namespace accrue {

class CachingAllocator : public Allocator {
 public:
  using Allocator::Allocator;

 protected:
  /// The block a request of `bytes` gets: nearby sizes share one so that they can reuse it.
  virtual std::size_t round_up(std::size_t bytes) const = 0;
  /// Whether a freed block of this size is kept (very large ones can go straight back).
  virtual bool keeps(std::size_t /*block*/) const { return true; }
  /// nullptr when the system has no memory to give.
  virtual void* system_allocate(std::size_t block) = 0;
  virtual void system_free(void* ptr) noexcept = 0;

  void* raw_allocate(std::size_t bytes) final;
  void raw_deallocate(void* ptr, std::size_t bytes) noexcept final;
  std::size_t reserved_bytes() const final { return reserved_; }
  /// Derived destructors call this: system_free cannot be reached from ~CachingAllocator.
  void release_cached() noexcept final;

 private:
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks_;
  std::size_t reserved_ = 0;
};

}  // namespace accrue
