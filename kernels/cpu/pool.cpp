// Pooling on the CPU: one (H, W) plane per step, planes split across the pool; float32 or bfloat16.

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>

#include "lane_masks.hpp"
#endif

#include "../../framework/core/half.hpp"
#include "parallel.hpp"
#include "pool.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {
namespace {

// Planes per task below which splitting does not pay (a 28x28 plane is about a microsecond).
constexpr std::int64_t plane_grain = 16;

// The 2x2 windows of stride 2 without padding of nearly every CNN: no bounds to check, and each
// input belongs to one window, so backward writes dx directly.
bool is_plain_2x2(const Window2d& g) {
  return g.R == 2 && g.S == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 && g.pad_w == 0;
}

// The winner of each window (a b / c d) in max_pool_winner's order: the first largest, or the
// last NaN. (The scalar loops' rule; with AVX-512 winners16 applies it sixteen windows at a time,
// with AVX2 winners8 eight.)
[[maybe_unused]] inline bool takes(float v, float best) { return v > best || v != v; }

#if defined(__AVX512F__)
// Up to 16 windows of a row pair at once: the two rows are loaded 32 floats at a time and split
// into their even and odd columns; comparisons become masks, so random data costs no
// mispredicted branches (the scalar loop spent most of its time on those).

inline void load_pairs(const float* row, std::int64_t n, __m512& even, __m512& odd) {
  const __m512 lo = _mm512_maskz_loadu_ps(first_lanes16(2 * n), row);
  const __m512 hi = _mm512_maskz_loadu_ps(first_lanes16(2 * n - 16), row + 16);
  const __m512i even_idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd_idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  even = _mm512_permutex2var_ps(lo, even_idx, hi);
  odd = _mm512_permutex2var_ps(lo, odd_idx, hi);
}

inline void store_pairs(float* row, std::int64_t n, __m512 even, __m512 odd, bool accumulate) {
  const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi_idx = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  __m512 lo = _mm512_permutex2var_ps(even, lo_idx, odd), hi = _mm512_permutex2var_ps(even, hi_idx, odd);
  const __mmask16 mlo = first_lanes16(2 * n), mhi = first_lanes16(2 * n - 16);
  if (accumulate) {
    lo = _mm512_add_ps(lo, _mm512_maskz_loadu_ps(mlo, row));
    hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(mhi, row + 16));
  }
  _mm512_mask_storeu_ps(row, mlo, lo);
  _mm512_mask_storeu_ps(row + 16, mhi, hi);
}

inline __mmask16 takes16(__m512 v, __m512 best) {
  return _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
}

// n <= 16 windows starting at column 2q of rows r0 and r1: their maxima, and which of the four
// cells (top-left, top-right, bottom-left, bottom-right) won each.
struct Winners16 {
  __m512 max;
  __mmask16 a, b, c, d;
};

inline Winners16 winners16(const float* r0, const float* r1, std::int64_t n) {
  __m512 a, b, c, d;
  load_pairs(r0, n, a, b);
  load_pairs(r1, n, c, d);
  __m512 m = a;
  const __mmask16 tb = takes16(b, m);
  m = _mm512_mask_mov_ps(m, tb, b);
  const __mmask16 tc = takes16(c, m);
  m = _mm512_mask_mov_ps(m, tc, c);
  const __mmask16 td = takes16(d, m);
  m = _mm512_mask_mov_ps(m, td, d);
  // The last taker wins.
  return {m, static_cast<__mmask16>(~(tb | tc | td)), static_cast<__mmask16>(tb & ~tc & ~td),
          static_cast<__mmask16>(tc & ~td), td};
}
#elif defined(__AVX2__)
// The same with AVX2, eight windows at a time: masks are all-ones lanes, the ragged end of a row
// loads through vmaskmovps and stores lane by lane (store_first8). Without it the scalar loop's
// mispredicted branches made max pooling a fifth of the CNN's epoch on a Zen 3.

// Columns 0, 2, ..., 14 and 1, 3, ..., 15 of the first 2n floats of `row`.
inline void load_pairs8(const float* row, std::int64_t n, __m256& even, __m256& odd) {
  const __m256 lo = _mm256_maskload_ps(row, first_lanes8(2 * n)), hi = _mm256_maskload_ps(row + 8, first_lanes8(2 * n - 8));
  // Within each 128-bit half, then the halves' 64-bit pieces put in order.
  even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
  odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
}

inline void store_pairs8(float* row, std::int64_t n, __m256 even, __m256 odd, bool accumulate) {
  const __m256 a = _mm256_unpacklo_ps(even, odd), b = _mm256_unpackhi_ps(even, odd);
  __m256 lo = _mm256_permute2f128_ps(a, b, 0x20), hi = _mm256_permute2f128_ps(a, b, 0x31);
  const __m256i mlo = first_lanes8(2 * n), mhi = first_lanes8(2 * n - 8);
  if (accumulate) {
    lo = _mm256_add_ps(lo, _mm256_maskload_ps(row, mlo));
    hi = _mm256_add_ps(hi, _mm256_maskload_ps(row + 8, mhi));
  }
  store_first8(row, 2 * n, lo);
  store_first8(row + 8, 2 * n - 8, hi);
}

inline __m256 takes8(__m256 v, __m256 best) {
  return _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

struct Winners8 {
  __m256 max, a, b, c, d;
};

inline Winners8 winners8(const float* r0, const float* r1, std::int64_t n) {
  __m256 a, b, c, d;
  load_pairs8(r0, n, a, b);
  load_pairs8(r1, n, c, d);
  __m256 m = a;
  const __m256 tb = takes8(b, m);
  m = _mm256_blendv_ps(m, b, tb);
  const __m256 tc = takes8(c, m);
  m = _mm256_blendv_ps(m, c, tc);
  const __m256 td = takes8(d, m);
  m = _mm256_blendv_ps(m, d, td);
  // The last taker wins.
  const __m256 later_c = _mm256_andnot_ps(td, tc);
  return {m, _mm256_andnot_ps(_mm256_or_ps(tb, _mm256_or_ps(tc, td)), _mm256_castsi256_ps(_mm256_set1_epi32(-1))),
          _mm256_andnot_ps(_mm256_or_ps(tc, td), tb), later_c, td};
}
#endif

void max_pool_2x2_forward(const float* x, float* y, const Window2d& g) {
  const std::int64_t P = g.P(), Q = g.Q();
  for (std::int64_t p = 0; p < P; ++p) {
    const float* r0 = x + 2 * p * g.W;
    const float* r1 = r0 + g.W;
    float* out = y + p * Q;
#if defined(__AVX512F__)
    for (std::int64_t q = 0; q < Q; q += 16) {
      const std::int64_t n = Q - q < 16 ? Q - q : 16;
      _mm512_mask_storeu_ps(out + q, first_lanes16(n), winners16(r0 + 2 * q, r1 + 2 * q, n).max);
    }
#elif defined(__AVX2__)
    for (std::int64_t q = 0; q < Q; q += 8) {
      const std::int64_t n = Q - q < 8 ? Q - q : 8;
      store_first8(out + q, n, winners8(r0 + 2 * q, r1 + 2 * q, n).max);
    }
#else
    for (std::int64_t q = 0; q < Q; ++q) {
      float m = r0[2 * q];
      if (takes(r0[2 * q + 1], m)) m = r0[2 * q + 1];
      if (takes(r1[2 * q], m)) m = r1[2 * q];
      if (takes(r1[2 * q + 1], m)) m = r1[2 * q + 1];
      out[q] = m;
    }
#endif
  }
}

void max_pool_2x2_backward(const float* x, const float* dy, float* dx, const Window2d& g, bool accumulate) {
  if (!accumulate && (g.H % 2 != 0 || g.W % 2 != 0)) {
    std::fill(dx, dx + g.H * g.W, 0.0f);  // rows and columns no window covers
    accumulate = true;
  }
  const std::int64_t P = g.P(), Q = g.Q();
  for (std::int64_t p = 0; p < P; ++p) {
    const float* r0 = x + 2 * p * g.W;
    const float* r1 = r0 + g.W;
    float* d0 = dx + 2 * p * g.W;
    float* d1 = d0 + g.W;
    const float* grad = dy + p * Q;
#if defined(__AVX512F__)
    for (std::int64_t q = 0; q < Q; q += 16) {
      const std::int64_t n = Q - q < 16 ? Q - q : 16;
      const Winners16 w = winners16(r0 + 2 * q, r1 + 2 * q, n);
      const __m512 v = _mm512_maskz_loadu_ps(first_lanes16(n), grad + q);
      store_pairs(d0 + 2 * q, n, _mm512_maskz_mov_ps(w.a, v), _mm512_maskz_mov_ps(w.b, v), accumulate);
      store_pairs(d1 + 2 * q, n, _mm512_maskz_mov_ps(w.c, v), _mm512_maskz_mov_ps(w.d, v), accumulate);
    }
#elif defined(__AVX2__)
    for (std::int64_t q = 0; q < Q; q += 8) {
      const std::int64_t n = Q - q < 8 ? Q - q : 8;
      const Winners8 w = winners8(r0 + 2 * q, r1 + 2 * q, n);
      const __m256 v = _mm256_maskload_ps(grad + q, first_lanes8(n));
      store_pairs8(d0 + 2 * q, n, _mm256_and_ps(w.a, v), _mm256_and_ps(w.b, v), accumulate);
      store_pairs8(d1 + 2 * q, n, _mm256_and_ps(w.c, v), _mm256_and_ps(w.d, v), accumulate);
    }
#else
    for (std::int64_t q = 0; q < Q; ++q) {
      const float a = r0[2 * q], b = r0[2 * q + 1], c = r1[2 * q], d = r1[2 * q + 1];
      int win = 0;
      float m = a;
      if (takes(b, m)) win = 1, m = b;
      if (takes(c, m)) win = 2, m = c;
      if (takes(d, m)) win = 3;
      const float v = grad[q];
      float* cells[4] = {d0 + 2 * q, d0 + 2 * q + 1, d1 + 2 * q, d1 + 2 * q + 1};
      for (int k = 0; k < 4; ++k) *cells[k] = (accumulate ? *cells[k] : 0.0f) + (k == win ? v : 0.0f);
    }
#endif
  }
}

// One plane (H, W) of x into one plane (P, Q) of y.
void forward_plane(const float* xp, float* yp, const Window2d& g, PoolMode mode) {
  const std::int64_t P = g.P(), Q = g.Q();
  if (mode == PoolMode::max && is_plain_2x2(g)) return max_pool_2x2_forward(xp, yp, g);
  for (std::int64_t p = 0; p < P; ++p)
    for (std::int64_t q = 0; q < Q; ++q) {
      if (mode == PoolMode::max) {
        const std::int64_t at = common::max_pool_winner(xp, g, p, q);
        yp[p * Q + q] = at < 0 ? -INFINITY : xp[at];
        continue;
      }
      float sum = 0.0f;
      for (std::int64_t r = 0; r < g.R; ++r) {
        const std::int64_t h = g.in_row(p, r);
        if (h < 0 || h >= g.H) continue;
        for (std::int64_t s = 0; s < g.S; ++s) {
          const std::int64_t w = g.in_col(q, s);
          if (w >= 0 && w < g.W) sum += xp[h * g.W + w];
        }
      }
      yp[p * Q + q] = sum / common::average_pool_divisor(g, p, q, mode);
    }
}

void backward_plane(const float* xp, const float* dyp, float* dxp, const Window2d& g, PoolMode mode, bool accumulate) {
  const std::int64_t P = g.P(), Q = g.Q();
  if (mode == PoolMode::max && is_plain_2x2(g)) return max_pool_2x2_backward(xp, dyp, dxp, g, accumulate);
  if (!accumulate) std::fill(dxp, dxp + g.H * g.W, 0.0f);
  for (std::int64_t p = 0; p < P; ++p)
    for (std::int64_t q = 0; q < Q; ++q) {
      const float d = dyp[p * Q + q];
      if (mode == PoolMode::max) {
        const std::int64_t at = common::max_pool_winner(xp, g, p, q);
        if (at >= 0) dxp[at] += d;
        continue;
      }
      const float share = d / common::average_pool_divisor(g, p, q, mode);
      for (std::int64_t r = 0; r < g.R; ++r) {
        const std::int64_t h = g.in_row(p, r);
        if (h < 0 || h >= g.H) continue;
        for (std::int64_t s = 0; s < g.S; ++s) {
          const std::int64_t w = g.in_col(q, s);
          if (w >= 0 && w < g.W) dxp[h * g.W + w] += share;
        }
      }
    }
}

void widen(const std::uint16_t* in, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = common::float_from_bf16_bits(in[i]);
}

void narrow(const float* in, std::uint16_t* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = common::bf16_bits_from_float(in[i]);
}

}  // namespace

void pool2d_forward(const float* x, float* y, const Window2d& g, PoolMode mode) {
  const std::int64_t PQ = g.P() * g.Q(), HW = g.H * g.W;
  parallel_for(g.N * g.C, plane_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t plane = begin; plane < end; ++plane) forward_plane(x + plane * HW, y + plane * PQ, g, mode);
  });
}

void pool2d_backward(const float* x, const float* dy, float* dx, const Window2d& g, PoolMode mode, bool accumulate) {
  const std::int64_t PQ = g.P() * g.Q(), HW = g.H * g.W;
  parallel_for(g.N * g.C, plane_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t plane = begin; plane < end; ++plane)
      backward_plane(x + plane * HW, dy + plane * PQ, dx + plane * HW, g, mode, accumulate);
  });
}

// bfloat16: each plane widened to float32 in cache, pooled by the float32 code, and narrowed (max
// pooling picks values, so it rounds nothing; averages and gradient sums round once).
void pool2d_forward_bf16(const std::uint16_t* x, std::uint16_t* y, const Window2d& g, PoolMode mode) {
  const std::int64_t PQ = g.P() * g.Q(), HW = g.H * g.W;
  parallel_for(g.N * g.C, plane_grain, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> xp(static_cast<std::size_t>(HW)), yp(static_cast<std::size_t>(PQ));
    for (std::int64_t plane = begin; plane < end; ++plane) {
      widen(x + plane * HW, xp.data(), HW);
      forward_plane(xp.data(), yp.data(), g, mode);
      narrow(yp.data(), y + plane * PQ, PQ);
    }
  });
}

void pool2d_backward_bf16(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx, const Window2d& g,
                          PoolMode mode, bool accumulate) {
  const std::int64_t PQ = g.P() * g.Q(), HW = g.H * g.W;
  parallel_for(g.N * g.C, plane_grain, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> xp(static_cast<std::size_t>(HW)), dyp(static_cast<std::size_t>(PQ)), dxp(static_cast<std::size_t>(HW));
    for (std::int64_t plane = begin; plane < end; ++plane) {
      widen(x + plane * HW, xp.data(), HW);
      widen(dy + plane * PQ, dyp.data(), PQ);
      if (accumulate) widen(dx + plane * HW, dxp.data(), HW);
      backward_plane(xp.data(), dyp.data(), dxp.data(), g, mode, accumulate);
      narrow(dxp.data(), dx + plane * HW, HW);
    }
  });
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
