#pragma once
// Softmax cross-entropy from logits, one row (sample) at a time, fused and numerically stable:
// loss = logsumexp(x) - (1 - eps) x[label] - eps/C sum_j x[j], with eps the label smoothing
// (0 by default). The log-sum-exp is saved from forward so backward needs no second pass over
// exp(x - max) sums: dL/dx[j] = g (exp(x[j] - lse) - (1 - eps) [j == label] - eps / C).

#include <cmath>
#include <cstdint>
#include <climits>

#include "../../framework/core/macros.hpp"

namespace accrue::kernels::common {

/// The label value of an `ignore` argument that no label has: nothing is ignored.
inline constexpr std::int64_t no_ignored_label = INT64_MIN;

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

/// The loss of a row from its log-sum-exp, its label's logit and (for smoothing) the sum of its
/// logits; the GPU kernel computes those three in parallel and finishes here.
ACCRUE_HD float cross_entropy_loss(float lse, float x_label, float sum_x, std::int64_t C, float smoothing) {
  float loss = lse - (1.0f - smoothing) * x_label;
  if (smoothing != 0.0f) loss -= smoothing / static_cast<float>(C) * sum_x;
  return loss;
}

/// dloss/dx[j] for one logit of a row.
ACCRUE_HD float cross_entropy_grad(float x, float lse, bool is_label, std::int64_t C, float smoothing) {
  float d = expf(x - lse) - smoothing / static_cast<float>(C);
  if (is_label) d -= 1.0f - smoothing;
  return d;
}

/// The loss of one row; writes the row's log-sum-exp to *lse for backward.
ACCRUE_HD float cross_entropy_row(const float* x, std::int64_t C, std::int32_t label, float smoothing, float* lse) {
  const float l = row_logsumexp(x, C);
  *lse = l;
  float sum = 0.0f;
  if (smoothing != 0.0f)
    for (std::int64_t j = 0; j < C; ++j) sum += x[j];
  return cross_entropy_loss(l, x[label], sum, C, smoothing);
}

/// dx (+)= g * dloss/dx for one row.
ACCRUE_HD void cross_entropy_row_grad(const float* x, std::int64_t C, std::int32_t label, float smoothing, float lse,
                                      float g, float* dx, bool accumulate) {
  for (std::int64_t j = 0; j < C; ++j) {
    const float d = cross_entropy_grad(x[j], lse, j == label, C, smoothing);
    dx[j] = accumulate ? dx[j] + g * d : g * d;
  }
}

}  // namespace accrue::kernels::common
