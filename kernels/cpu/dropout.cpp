#include "accrue/kernels/common/dropout.hpp"

#include "accrue/kernels/cpu/parallel.hpp"
#include "accrue/kernels/dropout.hpp"

namespace accrue::kernels::cpu {

void dropout_apply(const float* in, float* out, std::int64_t n, float p, std::uint64_t seed, std::uint64_t offset,
                   bool accumulate) {
  const float scale = 1.0f / (1.0f - p);
  parallel_for(n, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const float v = in[i] * common::dropout_factor(seed, offset, static_cast<std::uint64_t>(i), p, scale);
      out[i] = accumulate ? out[i] + v : v;
    }
  });
}

}  // namespace accrue::kernels::cpu
