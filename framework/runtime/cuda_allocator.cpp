#include "cuda_allocator.hpp"

#include <array>
#include <memory>
#include <mutex>

#include "device_runtime.hpp"

namespace accrue {

std::size_t CudaAllocator::block_size(std::size_t bytes) {
  constexpr std::size_t small = 512, large = std::size_t{2} << 20;
  if (bytes == 0) return small;
  if (bytes < (std::size_t{1} << 20)) return (bytes + small - 1) / small * small;
  return (bytes + large - 1) / large * large;
}

void* CudaAllocator::system_allocate(std::size_t block) { return runtime::device_malloc(device(), block); }

void CudaAllocator::system_free(void* ptr) noexcept { runtime::device_free(device(), ptr); }

Allocator& cuda_allocator(int index) {
  static std::mutex mutex;
  // Never destroyed, like the device contexts: tensors in static objects may outlive main().
  static std::array<CudaAllocator*, 64> allocators{};
  std::lock_guard lock{mutex};
  auto& slot = allocators.at(static_cast<std::size_t>(index));
  if (slot == nullptr) slot = new CudaAllocator(Device::cuda(index));
  return *slot;
}

}  // namespace accrue
