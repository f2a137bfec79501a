#include <atomic>

#include "amp_update.hpp"
#include "../common/amp_update.hpp"
#include "parallel.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {

bool unscale_and_check(float* g, std::int64_t n, float inverse_scale) {
  std::atomic<bool> found{false};
  parallel_for(n, 1 << 15, [&](std::int64_t begin, std::int64_t end) {
    const float inverse = inverse_scale;
    float* __restrict p = g;
    bool any = false;
    for (std::int64_t i = begin; i < end; ++i) any |= common::unscale_element(p + i, inverse);
    if (any) found.store(true, std::memory_order_relaxed);
  });
  return found.load();
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
