#pragma once
// Softmax and log-softmax over one slice of D values spaced `stride` apart (the reduced dimension
// of an (outer, D, inner) view), and their backward passes.

#include <cmath>
#include <cstdint>

#include "accrue/kernels/common/macros.hpp"

namespace accrue::kernels::common {

ACCRUE_HD void softmax_slice(const float* x, float* y, std::int64_t D, std::int64_t stride, bool log) {
  float m = x[0];
  for (std::int64_t j = 1; j < D; ++j) m = x[j * stride] > m ? x[j * stride] : m;
  float s = 0.0f;
  for (std::int64_t j = 0; j < D; ++j) s += expf(x[j * stride] - m);
  if (log) {
    const float lse = m + logf(s);
    for (std::int64_t j = 0; j < D; ++j) y[j * stride] = x[j * stride] - lse;
  } else {
    const float inv = 1.0f / s;
    for (std::int64_t j = 0; j < D; ++j) y[j * stride] = expf(x[j * stride] - m) * inv;
  }
}

/// softmax: dx = y (dy - sum(dy y)); log-softmax: dx = dy - exp(y) sum(dy). Adds into dx when
/// `accumulate`.
ACCRUE_HD void softmax_slice_backward(const float* y, const float* dy, float* dx, std::int64_t D, std::int64_t stride,
                                      bool log, bool accumulate) {
  float s = 0.0f;
  for (std::int64_t j = 0; j < D; ++j) s += log ? dy[j * stride] : dy[j * stride] * y[j * stride];
  for (std::int64_t j = 0; j < D; ++j) {
    const std::int64_t k = j * stride;
    const float g = log ? dy[k] - expf(y[k]) * s : y[k] * (dy[k] - s);
    dx[k] = accumulate ? dx[k] + g : g;
  }
}

}  // namespace accrue::kernels::common
