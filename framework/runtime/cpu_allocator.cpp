#include "cpu_allocator.hpp"

#include <cstdlib>

namespace accrue {

// Rounding lets blocks of nearby sizes (a short last batch) be reused without splitting.
std::size_t CpuAllocator::block_size(std::size_t bytes) {
  if (bytes == 0) return 64;
  if (bytes < 4096) return (bytes + 63) & ~std::size_t{63};
  return (bytes + 4095) & ~std::size_t{4095};
}

void* CpuAllocator::system_allocate(std::size_t block) {
  // The kernel hands out more than the machine holds (overcommit) and ends the process when the
  // pages are filled: a block the machine cannot hold is refused here, where it can be reported.
  // Small blocks are not checked (reading /proc costs about 20 us); a large one soon follows them.
  if (block >= (std::size_t{1} << 20))
    if (const std::optional<std::size_t> available = available_system_memory(); available && block > *available)
      return nullptr;
  return std::aligned_alloc(64, block);
}

void CpuAllocator::system_free(void* ptr) noexcept { std::free(ptr); }

}  // namespace accrue
