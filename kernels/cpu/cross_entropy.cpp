#include "../common/cross_entropy.hpp"

#include <algorithm>

#include "parallel.hpp"
#include "cross_entropy.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {

std::int64_t first_out_of_range(const std::int32_t* labels, std::int64_t B, std::int64_t C, std::int64_t ignore) {
  for (std::int64_t b = 0; b < B; ++b)
    if ((labels[b] < 0 || labels[b] >= C) && labels[b] != ignore) return b;
  return -1;
}

void cross_entropy_forward(const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C,
                           float smoothing, std::int64_t ignore, float* loss, float* lse) {
  parallel_for(B, std::max<std::int64_t>(1, 8192 / std::max<std::int64_t>(C, 1)), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t b = begin; b < end; ++b) {
      if (labels[b] == ignore) {
        loss[b] = lse[b] = 0.0f;
        continue;
      }
      loss[b] = common::cross_entropy_row(logits + b * C, C, labels[b], smoothing, lse + b);
    }
  });
}

void cross_entropy_backward(const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C,
                            float smoothing, std::int64_t ignore, const float* lse, const float* g, float* dlogits,
                            bool accumulate) {
  parallel_for(B, std::max<std::int64_t>(1, 8192 / std::max<std::int64_t>(C, 1)), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t b = begin; b < end; ++b) {
      if (labels[b] == ignore) {
        if (!accumulate) std::fill_n(dlogits + b * C, C, 0.0f);
        continue;
      }
      common::cross_entropy_row_grad(logits + b * C, C, labels[b], smoothing, lse[b], g[b], dlogits + b * C, accumulate);
    }
  });
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
