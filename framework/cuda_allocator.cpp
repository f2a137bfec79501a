#include "accrue/framework/cuda_allocator.hpp"

#include <array>
#include <memory>
#include <mutex>

#include "accrue/kernels/cuda/context.hpp"

namespace accrue {

std::size_t CudaAllocator::block_size(std::size_t bytes) {
  constexpr std::size_t small = 512, large = std::size_t{2} << 20;
  if (bytes == 0) return small;
  if (bytes < (std::size_t{1} << 20)) return (bytes + small - 1) / small * small;
  return (bytes + large - 1) / large * large;
}

void* CudaAllocator::raw_allocate(std::size_t bytes) {
  const std::size_t size = block_size(bytes);
  if (auto it = free_blocks_.find(size); it != free_blocks_.end() && !it->second.empty()) {
    void* ptr = it->second.back();
    it->second.pop_back();
    return ptr;
  }
  void* ptr = kernels::cuda::device_malloc(device().index(), size);
  if (ptr == nullptr) {
    // Cached blocks of other sizes may be what is missing: give them back and try once more.
    release_cached();
    ptr = kernels::cuda::device_malloc(device().index(), size);
    if (ptr == nullptr) return nullptr;
  }
  reserved_ += size;
  return ptr;
}

void CudaAllocator::raw_deallocate(void* ptr, std::size_t bytes) noexcept {
  const std::size_t size = block_size(bytes);
  try {
    free_blocks_[size].push_back(ptr);
  } catch (...) {
    kernels::cuda::device_free(device().index(), ptr);
    reserved_ -= size;
  }
}

void CudaAllocator::release_cached() noexcept {
  for (auto& [size, blocks] : free_blocks_) {
    for (void* p : blocks) kernels::cuda::device_free(device().index(), p);
    reserved_ -= size * blocks.size();
  }
  free_blocks_.clear();
}

CudaAllocator::~CudaAllocator() { release_cached(); }

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
