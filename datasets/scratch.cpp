#include "scratch.hpp"

#include <cstdlib>
#include <new>
#include <utility>

namespace accrue::datasets::detail {
namespace {

// The most recently freed blocks of this thread, by size; a few per thread bound what stays held.
struct ThreadCache {
  static constexpr int slots = 8;
  struct Block {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  } blocks[slots];
  int next = 0;
  ~ThreadCache() {
    for (Block& b : blocks) std::free(b.ptr);
  }
};

thread_local ThreadCache cache;

// Small blocks come quickly from malloc's own bins.
constexpr std::size_t cached_from = std::size_t{64} << 10;

}  // namespace

void* scratch_allocate(std::size_t bytes) {
  if (bytes >= cached_from)
    for (ThreadCache::Block& b : cache.blocks)
      if (b.ptr != nullptr && b.bytes == bytes) return std::exchange(b.ptr, nullptr);
  void* ptr = std::malloc(bytes == 0 ? 1 : bytes);
  if (ptr == nullptr) throw std::bad_alloc();
  return ptr;
}

void scratch_free(void* ptr, std::size_t bytes) noexcept {
  if (bytes < cached_from) {
    std::free(ptr);
    return;
  }
  ThreadCache::Block& slot = cache.blocks[cache.next];
  cache.next = (cache.next + 1) % ThreadCache::slots;
  std::free(slot.ptr);
  slot = {ptr, bytes};
}

}  // namespace accrue::datasets::detail
