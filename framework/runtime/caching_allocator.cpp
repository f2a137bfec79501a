#include "caching_allocator.hpp"

namespace accrue {

void* CachingAllocator::raw_allocate(std::size_t bytes) {
  const std::size_t size = round_up(bytes);
  if (auto it = free_blocks_.find(size); it != free_blocks_.end() && !it->second.empty()) {
    void* ptr = it->second.back();
    it->second.pop_back();
    return ptr;
  }
  void* ptr = system_allocate(size);
  if (ptr == nullptr) {
    // Cached blocks of other sizes may be what is missing: give them back and try once more.
    release_cached();
    ptr = system_allocate(size);
    if (ptr == nullptr) return nullptr;
  }
  reserved_ += size;
  return ptr;
}

void CachingAllocator::raw_deallocate(void* ptr, std::size_t bytes) noexcept {
  const std::size_t size = round_up(bytes);
  if (keeps(size)) {
    try {
      free_blocks_[size].push_back(ptr);
      return;
    } catch (...) {
      // No memory for the cache's bookkeeping: the block goes back instead.
    }
  }
  system_free(ptr);
  reserved_ -= size;
}

void CachingAllocator::release_cached() noexcept {
  for (auto& [size, blocks] : free_blocks_) {
    for (void* p : blocks) system_free(p);
    reserved_ -= size * blocks.size();
  }
  free_blocks_.clear();
}

}  // namespace accrue
