#pragma once
// Softmax cross-entropy from logits, one row (sample) at a time, fused and numerically stable:
// loss = logsumexp(x) - (1 - eps) x[label] - eps/C sum_j x[j], with eps the label smoothing
// (0 by default). The log-sum-exp is saved from forward so backward needs no second pass over
// exp(x - max) sums: dL/dx[j] = g (exp(x[j] - lse) - (1 - eps) [j == label] - eps / C).

#include <cmath>
#include <cstdint>

#include "accrue/kernels/common/macros.hpp"

namespace accrue::kernels::common {

/// log(sum_j exp(x[j])) for a row of C values, shifted by the row maximum so exp never overflows.
ACCRUE_HD float row_logsumexp(const float* x, std::int64_t C) {
  float m = x[0];
  for (std::int64_t j = 1; j < C; ++j) m = x[j] > m ? x[j] : m;
  // An infinite or NaN maximum makes the loss non-finite anyway; return it rather than exp(inf - inf).
  if (!(m - m == 0.0f)) return m;
  float s = 0.0f;
  for (std::int64_t j = 0; j < C; ++j) s += expf(x[j] - m);
  return m + logf(s);
}

/// The loss of one row; writes the row's log-sum-exp to *lse for backward.
ACCRUE_HD float cross_entropy_row(const float* x, std::int64_t C, std::int32_t label, float smoothing, float* lse) {
  const float l = row_logsumexp(x, C);
  *lse = l;
  float loss = l - (1.0f - smoothing) * x[label];
  if (smoothing != 0.0f) {
    float sum = 0.0f;
    for (std::int64_t j = 0; j < C; ++j) sum += x[j];
    loss -= smoothing / static_cast<float>(C) * sum;
  }
  return loss;
}

/// dx (+)= g * dloss/dx for one row.
ACCRUE_HD void cross_entropy_row_grad(const float* x, std::int64_t C, std::int32_t label, float smoothing, float lse,
                                      float g, float* dx, bool accumulate) {
  const float uniform = smoothing / static_cast<float>(C);
  for (std::int64_t j = 0; j < C; ++j) {
    float d = expf(x[j] - lse) - uniform;
    if (j == label) d -= 1.0f - smoothing;
    dx[j] = accumulate ? dx[j] + g * d : g * d;
  }
}

}  // namespace accrue::kernels::common
