// Each device's allocator, made on first use with the limit ACCRUE_MEMORY_LIMIT gives it, and the
// accounting read through it. Apart from memory.cpp, which the allocators themselves stand on.

#include <array>
#include <mutex>

#include "cpu_allocator.hpp"
#include "cuda_allocator.hpp"
#include "../core/memory.hpp"

namespace accrue {

namespace {

// Each device's allocator takes ACCRUE_MEMORY_LIMIT's value once, when first used.
Allocator& with_env_limit(Allocator& a, std::once_flag& flag) {
  std::call_once(flag, [&] {
    if (const auto limit = env_memory_limit(a.device().str())) a.set_limit(*limit);
  });
  return a;
}

}  // namespace

Allocator& allocator(Device device) {
  if (device.is_cpu()) {
    static CpuAllocator cpu;
    static std::once_flag flag;
    return with_env_limit(cpu, flag);
  }
  static std::array<std::once_flag, 64> flags;
  return with_env_limit(cuda_allocator(device.index()), flags.at(static_cast<std::size_t>(device.index())));
}

MemoryStats memory_stats(Device device) { return allocator(device).stats(); }
void reset_peak_memory(Device device) { allocator(device).reset_peak(); }
void set_memory_limit(Device device, std::size_t bytes) { allocator(device).set_limit(bytes); }

}  // namespace accrue
