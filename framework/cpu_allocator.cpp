#include "accrue/framework/cpu_allocator.hpp"

#include <cstdlib>

namespace accrue {

// Rounding lets blocks of nearby sizes (a short last batch) be reused without splitting.
std::size_t CpuAllocator::block_size(std::size_t bytes) {
  if (bytes == 0) return 64;
  if (bytes < 4096) return (bytes + 63) & ~std::size_t{63};
  return (bytes + 4095) & ~std::size_t{4095};
}

void* CpuAllocator::system_allocate(std::size_t block) { return std::aligned_alloc(64, block); }

void CpuAllocator::system_free(void* ptr) noexcept { std::free(ptr); }

}  // namespace accrue
