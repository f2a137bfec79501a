#include "accrue/framework/cpu_allocator.hpp"

#include <cstdlib>

namespace accrue {

// Sizes round up to 64 bytes below a page and to whole pages above, so blocks of nearby sizes
// (a short last batch) can be reused without splitting.
std::size_t CpuAllocator::block_size(std::size_t bytes) {
  if (bytes == 0) return 64;
  if (bytes < 4096) return (bytes + 63) & ~std::size_t{63};
  return (bytes + 4095) & ~std::size_t{4095};
}

void* CpuAllocator::raw_allocate(std::size_t bytes) {
  const std::size_t size = block_size(bytes);
  if (auto it = free_blocks_.find(size); it != free_blocks_.end() && !it->second.empty()) {
    void* ptr = it->second.back();
    it->second.pop_back();
    return ptr;
  }
  void* ptr = std::aligned_alloc(64, size);
  if (ptr == nullptr) {
    // Give the cache back and try once more before reporting the system out of memory.
    release_cached();
    ptr = std::aligned_alloc(64, size);
    if (ptr == nullptr) return nullptr;
  }
  reserved_ += size;
  return ptr;
}

void CpuAllocator::raw_deallocate(void* ptr, std::size_t bytes) noexcept {
  const std::size_t size = block_size(bytes);
  if (size > max_cached_block) {
    std::free(ptr);
    reserved_ -= size;
    return;
  }
  try {
    free_blocks_[size].push_back(ptr);
  } catch (...) {
    std::free(ptr);
    reserved_ -= size;
  }
}

void CpuAllocator::release_cached() noexcept {
  for (auto& [size, blocks] : free_blocks_) {
    for (void* p : blocks) std::free(p);
    reserved_ -= size * blocks.size();
  }
  free_blocks_.clear();
}

CpuAllocator::~CpuAllocator() { release_cached(); }

}  // namespace accrue
