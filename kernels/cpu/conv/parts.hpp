#pragma once
// What the CPU convolution's forms share (kernels/cpu/conv.cpp chooses among them): the valid
// output ranges of a tap, the per-sample split over the pool's threads, workspace carving, the
// zero-padded image, the flipped weight of the input gradient, per-thread weight-gradient sums,
// the bias gradient, and one row of im2col.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "form.hpp"
#include "../lane_masks.hpp"

#include "../../../framework/core/error.hpp"

#include "../../../framework/core/half.hpp"
#include "../gemm/bf16.hpp"
#include "../gemm/openblas.hpp"
#include "../parallel.hpp"
#include "../gemm.hpp"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers build vectors from _mm512_undefined_ps(), which -Wuninitialized
// reports once inlined (a false positive, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The AVX-512 and AVX2 kernels and the packing beside them are compiled for them and chosen at
// run time.
#define ACCRUE_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define ACCRUE_TARGET_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace accrue::kernels::cpu::conv_detail {

// [lo, hi): the output positions whose tap at kernel offset k reads inside [0, in).
struct ValidRange {
  std::int64_t lo, hi;
};

inline ValidRange valid_outputs(std::int64_t out, std::int64_t in, std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                         std::int64_t k) {
  // input index i(o) = o * stride - pad + k * dilation
  const std::int64_t base = k * dilation - pad;
  auto first_at_least = [&](std::int64_t bound) {  // smallest o with base + o*stride >= bound
    const std::int64_t need = bound - base;
    if (need <= 0) return std::int64_t{0};
    return std::min(out, (need + stride - 1) / stride);
  };
  const std::int64_t lo = first_at_least(0), hi = std::max(lo, first_at_least(in));
  return {lo, hi};
}

// One sample's GEMMs, on the calling pool thread. OpenBLAS's own kernels, not the skinny ones of
// cpu::gemm: for these shapes (64 x 196 x 288 and its transposes) OpenBLAS measured 1.07x to 1.3x
// faster here (bench/conv_shapes and the numbers in the README).
inline void sample_gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
                 std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  constexpr int row_major = 101, no_trans = 111, trans = 112;
  if (M == 0 || N == 0) return;
  if (K == 0) return gemm(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);  // scales C by beta
  openblas().sgemm(row_major, trans_a ? trans : no_trans, trans_b ? trans : no_trans, static_cast<int>(M),
                   static_cast<int>(N), static_cast<int>(K), 1.0f, A, static_cast<int>(lda), B, static_cast<int>(ldb),
                   beta, C, static_cast<int>(ldc));
}

inline int tasks_for(std::int64_t samples) { return static_cast<int>(std::min<std::int64_t>(num_threads(), samples)); }

// Sample ranges of the tasks.
inline std::int64_t sample_begin(std::int64_t N, int tasks, int t) { return N * t / tasks; }

// v as U: float32 rounded to bfloat16 bits, bfloat16 bits widened, or as it is.
template <class U, class T>
inline U as(T v) {
  if constexpr (std::is_same_v<T, U>) return v;
  else if constexpr (std::is_same_v<U, std::uint16_t>) return common::bf16_bits_from_float(v);
  else return common::float_from_bf16_bits(v);
}

// Per pool task: a workspace of `bytes`, carved into 64-byte aligned pieces.
class Carve {
 public:
  explicit Carve(std::byte* at) : at_(at) {}
  template <class T>
  T* take(std::int64_t count) {
    T* p = reinterpret_cast<T*>(at_);
    at_ += aligned(static_cast<std::size_t>(count) * sizeof(T));
    return p;
  }
  static std::size_t aligned(std::size_t bytes) { return (bytes + 63) / 64 * 64; }
  template <class T>
  static std::size_t bytes(std::int64_t count) { return aligned(static_cast<std::size_t>(count) * sizeof(T)); }

 private:
  std::byte* at_;
};

// One sample's group of x with its zero padding written out, (Cg, H + 2 pad_h, W + 2 pad_w), in
// float32 or as bfloat16 bits: every tap of every output position then reads inside it, without
// bounds to check.
struct PaddedGroup {
  std::int64_t Hp, Wp;
  explicit PaddedGroup(const Window2d& g) : Hp(g.H + 2 * g.pad_h), Wp(g.W + 2 * g.pad_w) {}
  std::int64_t values(const Window2d& g) const { return g.channels_per_group() * Hp * Wp; }
  // Offset of tap k = (c, r, s) of output position (0, 0).
  std::int64_t tap(const Window2d& g, std::int64_t k) const {
    const std::int64_t c = k / (g.R * g.S), r = k / g.S % g.R, s = k % g.S;
    return (c * Hp + r * g.dilation_h) * Wp + s * g.dilation_w;
  }
  // Offset of output position m = (p, q) from its taps' (0, 0).
  std::int64_t position(const Window2d& g, std::int64_t m) const {
    return m / g.Q() * g.stride_h * Wp + m % g.Q() * g.stride_w;
  }
  // Zeros all of `out` (values()): the padding, which fill() never writes, once per buffer.
  template <class T>
  void clear(const Window2d& g, T* out) const {
    std::fill(out, out + values(g), T{0});
  }
  // Fills the inside of `out`, cleared before, from group `grp` of sample n, converting once here
  // rather than once for every tap that reads a value.
  template <class T>
  void fill(const void* x, DType x_type, const Window2d& g, std::int64_t n, std::int64_t grp, T* out) const {
    const std::int64_t first = (n * g.C + grp * g.channels_per_group()) * g.H * g.W;
    for (std::int64_t c = 0; c < g.channels_per_group(); ++c)
      for (std::int64_t h = 0; h < g.H; ++h) {
        T* row = out + (c * Hp + h + g.pad_h) * Wp + g.pad_w;
        const std::int64_t at = first + (c * g.H + h) * g.W;
        if (x_type == DType::bf16) copy_row(static_cast<const std::uint16_t*>(x) + at, row, g.W);
        else copy_row(static_cast<const float*>(x) + at, row, g.W);
      }
  }

 private:
  template <class S, class T>
  static void copy_row(const S* from, T* to, std::int64_t n) {
    if constexpr (std::is_same_v<S, T>) std::memcpy(to, from, static_cast<std::size_t>(n) * sizeof(T));
    else for (std::int64_t i = 0; i < n; ++i) to[i] = as<T>(from[i]);
  }
};

// With stride 1 and dilation 1 the input's gradient is itself a convolution: of dy, padded by
// R - 1 - pad_h and S - 1 - pad_w, with the weight flipped in space and its filters and channels
// swapped. It then runs as forward does, into dx, without an im2col matrix to scatter back.
inline bool input_gradient_is_a_convolution(const Window2d& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 && g.pad_h < g.R && g.pad_w < g.S;
}

inline Window2d input_gradient_window(const Window2d& g) {
  return {.N = g.N, .C = g.K, .H = g.P(), .W = g.Q(), .R = g.R, .S = g.S, .pad_h = g.R - 1 - g.pad_h,
          .pad_w = g.S - 1 - g.pad_w, .K = g.C, .groups = g.groups};
}

// out (C, K / groups, R, S) = w (K, C / groups, R, S) with each group's filters and channels
// swapped and every kernel turned by 180 degrees.
inline void flip_weight(const float* w, const Window2d& g, float* out) {
  const std::int64_t Cg = g.channels_per_group(), Kg = g.filters_per_group(), R = g.R, S = g.S;
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t k = 0; k < Kg; ++k)
      for (std::int64_t c = 0; c < Cg; ++c)
        for (std::int64_t r = 0; r < R; ++r)
          for (std::int64_t s = 0; s < S; ++s)
            out[(((grp * Cg + c) * Kg + k) * R + (R - 1 - r)) * S + (S - 1 - s)] =
                w[(((grp * Kg + k) * Cg + c) * R + r) * S + s];
}

inline std::size_t flipped_weight_bytes(const Window2d& g) { return Carve::bytes<float>(g.K * g.patch_size()); }

// Per-thread sums of the weight's gradient beyond the first thread's, which sums into dw itself.
inline std::size_t partials_bytes(const Window2d& g) {
  return Carve::bytes<float>(std::max(0, tasks_for(g.N) - 1) * g.K * g.patch_size());
}

inline void add_partials(const float* partials, float* dw, const Window2d& g) {
  const std::int64_t wsize = g.K * g.patch_size();
  for (int t = 1; t < tasks_for(g.N); ++t) {
    const float* part = partials + (t - 1) * wsize;
    for (std::int64_t i = 0; i < wsize; ++i) dw[i] += part[i];
  }
}

// db[k] (+)= the sum of dy over samples and positions of filter k: each sample's positions in 16
// float32 lanes (a loop that vectorises), the samples in double; filters split across the pool.
template <class T>
inline void backward_bias(const T* dy, float* db, const Window2d& g, bool accumulate) {
  const std::int64_t PQ = g.P() * g.Q();
  parallel_for(g.K, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, g.N * PQ)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t k = begin; k < end; ++k) {
                   double s = 0.0;
                   for (std::int64_t n = 0; n < g.N; ++n) {
                     const T* p = dy + (n * g.K + k) * PQ;
                     float lanes[16] = {};
                     std::int64_t i = 0;
                     for (; i + 16 <= PQ; i += 16)
                       for (int l = 0; l < 16; ++l) lanes[l] += as<float>(p[i + l]);
                     for (; i < PQ; ++i) lanes[0] += as<float>(p[i]);
                     float part = 0.0f;
                     for (const float v : lanes) part += v;
                     s += part;
                   }
                   db[k] = accumulate ? db[k] + static_cast<float>(s) : static_cast<float>(s);
                 }
               });
}

// Row k of the im2col matrix of one sample and group x: tap k = (c, r, s) of every output
// position, zero where it falls in the padding.
inline void im2col_row(const float* x, const Window2d& g, std::int64_t k, float* dst) {
  const std::int64_t P = g.P(), Q = g.Q();
  const std::int64_t c = k / (g.R * g.S), r = k / g.S % g.R, s = k % g.S;
  const float* xc = x + c * g.H * g.W;
  const ValidRange rows = valid_outputs(P, g.H, g.stride_h, g.pad_h, g.dilation_h, r);
  const ValidRange cols = valid_outputs(Q, g.W, g.stride_w, g.pad_w, g.dilation_w, s);
  std::fill(dst, dst + rows.lo * Q, 0.0f);
  for (std::int64_t p = rows.lo; p < rows.hi; ++p) {
    float* d = dst + p * Q;
    const float* src = xc + g.in_row(p, r) * g.W;
    std::fill(d, d + cols.lo, 0.0f);
    if (g.stride_w == 1)
      std::memcpy(d + cols.lo, src + g.in_col(cols.lo, s), static_cast<std::size_t>(cols.hi - cols.lo) * sizeof(float));
    else
      for (std::int64_t q = cols.lo; q < cols.hi; ++q) d[q] = src[g.in_col(q, s)];
    std::fill(d + cols.hi, d + Q, 0.0f);
  }
  std::fill(dst + rows.hi * Q, dst + P * Q, 0.0f);
}
}  // namespace accrue::kernels::cpu::conv_detail
