#pragma once
// Softmax and log-softmax over one slice of D values spaced `stride` apart (the reduced dimension
// of an (outer, D, inner) view), and their backward passes.

#include <cmath>
#include <cstdint>

#include "branchless_math.hpp"
#include "../../framework/core/macros.hpp"

namespace accrue::kernels::common {

// The sum and the maximum of a row. On the CPU in sixteen interleaved lanes, which the compiler
// keeps in one vector register: a plain loop is one chain of dependent additions that it may not
// reorder. The sum's order differs from a plain loop's, so its rounding may.
ACCRUE_HD float row_sum(const float* y, std::int64_t n) {
  float s = 0.0f;
#if defined(__CUDA_ARCH__)
  for (std::int64_t j = 0; j < n; ++j) s += y[j];
#else
  float lane[16] = {};
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int l = 0; l < 16; ++l) lane[l] += y[j + l];
  for (; j < n; ++j) s += y[j];
  for (int l = 0; l < 16; ++l) s += lane[l];
#endif
  return s;
}

ACCRUE_HD float row_max(const float* y, std::int64_t n) {
  float m = -INFINITY;
#if defined(__CUDA_ARCH__)
  for (std::int64_t j = 0; j < n; ++j) m = y[j] > m ? y[j] : m;
#else
  float lane[16];
  for (int l = 0; l < 16; ++l) lane[l] = -INFINITY;
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int l = 0; l < 16; ++l) lane[l] = y[j + l] > lane[l] ? y[j + l] : lane[l];
  for (; j < n; ++j) m = y[j] > m ? y[j] : m;
  for (int l = 0; l < 16; ++l) m = lane[l] > m ? lane[l] : m;
#endif
  return m;
}

ACCRUE_HD void softmax_slice(const float* x, float* y, std::int64_t D, std::int64_t stride, bool log) {
  float m = x[0];
  for (std::int64_t j = 1; j < D; ++j) m = x[j * stride] > m ? x[j * stride] : m;
  float s = 0.0f;
  for (std::int64_t j = 0; j < D; ++j) s += vector_exp_nonpositive(x[j * stride] - m);
  if (log) {
    const float lse = m + logf(s);
    for (std::int64_t j = 0; j < D; ++j) y[j * stride] = x[j * stride] - lse;
  } else {
    const float inv = 1.0f / s;
    for (std::int64_t j = 0; j < D; ++j) y[j * stride] = vector_exp_nonpositive(x[j * stride] - m) * inv;
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
    const float g = log ? dy[k] - vector_exp_nonpositive(y[k]) * s : y[k] * (dy[k] - s);
    dx[k] = accumulate ? dx[k] + g : g;
  }
}

/// Attention's softmax of one row of D scores: y_j = softmax over the kept entries of
/// (scale x_j + mask_j), 0 at the others. Entries j > last_kept are masked (causal attention keeps
/// j <= i + D - T_q for query i), and so are those whose mask is -inf or whose `padding` is not 0;
/// `mask` (one row of D additive values) and `padding` (D int32 flags: a padded key) may be null.
/// A row with nothing kept comes out all zeros, not NaN. x and y may be the same row.
ACCRUE_HD void masked_softmax_row(const float* x, const float* mask, float* y, std::int64_t D, std::int64_t last_kept,
                                  float scale, const std::int32_t* padding = nullptr) {
  // Scores first (-inf where masked), then their maximum, exponentials and sum, each a loop of
  // its own that vectorises on the CPU.
  const std::int64_t kept = last_kept + 1 < D ? last_kept + 1 : D;
  for (std::int64_t j = 0; j < kept; ++j) {
    const float score = scale * x[j] + (mask != nullptr ? mask[j] : 0.0f);
    y[j] = padding != nullptr && padding[j] != 0 ? -INFINITY : score;
  }
  for (std::int64_t j = kept < 0 ? 0 : kept; j < D; ++j) y[j] = 0.0f;
  const float m = row_max(y, kept);
  if (m == -INFINITY) {
    for (std::int64_t j = 0; j < D; ++j) y[j] = 0.0f;
    return;
  }
  for (std::int64_t j = 0; j < kept; ++j) y[j] = vector_exp_nonpositive(y[j] - m);
  const float inv = 1.0f / row_sum(y, kept);
  for (std::int64_t j = 0; j < kept; ++j) y[j] *= inv;
}

/// The gradient of masked_softmax_row: dx = scale y (dy - sum(dy y)); masked entries (y = 0) get
/// none. Adds into dx when `accumulate`. dy and dx may be the same row.
ACCRUE_HD void masked_softmax_row_backward(const float* y, const float* dy, float* dx, std::int64_t D, float scale,
                                           bool accumulate) {
  float s = 0.0f;
  for (std::int64_t j = 0; j < D; ++j) s += dy[j] * y[j];
  for (std::int64_t j = 0; j < D; ++j) {
    const float g = scale * y[j] * (dy[j] - s);
    dx[j] = accumulate ? dx[j] + g : g;
  }
}

/// The last entry query row r of (rows, T_q, D) scores keeps: all of them, or under the causal rule
/// those up to its position plus the keys before the queries (D - T_q); -1 keeps none.
ACCRUE_HD std::int64_t last_kept_entry(std::int64_t r, std::int64_t T_q, std::int64_t D, bool causal) {
  if (!causal) return D - 1;
  const std::int64_t last = r % T_q + D - T_q;
  return last < D - 1 ? (last < -1 ? -1 : last) : D - 1;
}

}  // namespace accrue::kernels::common
