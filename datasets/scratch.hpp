#pragma once
// Buffers of images being decoded and transformed, kept per thread for the next sample: every
// sample asks for the same few sizes again, and a fresh 224 x 224 float image (588 KiB) is above
// the C library's mmap threshold, so without a cache each one costs a mapping and a page fault
// per 4 KiB touched (two thirds of a JPEG sample's time, measured).

#include <cstddef>
#include <vector>

namespace accrue::datasets {

namespace detail {
void* scratch_allocate(std::size_t bytes);
void scratch_free(void* ptr, std::size_t bytes) noexcept;
}  // namespace detail

/// A std::allocator whose blocks come from the calling thread's cache of freed ones.
template <class T>
struct ScratchAllocator {
  using value_type = T;
  ScratchAllocator() = default;
  template <class U>
  ScratchAllocator(const ScratchAllocator<U>&) noexcept {}  // NOLINT: rebinding, as std::allocator
  T* allocate(std::size_t n) { return static_cast<T*>(detail::scratch_allocate(n * sizeof(T))); }
  void deallocate(T* ptr, std::size_t n) noexcept { detail::scratch_free(ptr, n * sizeof(T)); }
  template <class U>
  friend bool operator==(const ScratchAllocator&, const ScratchAllocator<U>&) {
    return true;  // any thread's cache can take any block back
  }
};

template <class T>
using ScratchVector = std::vector<T, ScratchAllocator<T>>;

}  // namespace accrue::datasets
