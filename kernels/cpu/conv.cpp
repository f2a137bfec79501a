// Convolution on the CPU. Each pool thread takes whole samples, so every product is single-threaded
// and one sample's operands stay in that core's cache; the weight gradient is summed in one buffer
// per thread and added up at the end. Two forms in each type (bench/conv_shapes times them):
// - the implicit GEMM (AVX-512, or AVX2 with FMA in float32): products read the zero-padded image
//   where it lies, so the im2col matrix is never written; in bfloat16 (AVX-512 BF16) over pairs of
//   channels or positions;
// - im2col: with OpenBLAS's sgemm in float32, and written straight into the bfloat16 kernels' pair
//   layout for AMX's tiles or vdpbf16ps in bfloat16. It serves processors without the first form,
//   pointwise convolutions and passes with fewer than 16 output channels per group.
// A third in float32, Winograd F(2x2, 3x3) on the implicit GEMM's tiles, runs every pass of 3x3
// convolutions of stride 1 where it was measured faster (AVX2).
// With stride 1 and dilation 1 the input's gradient runs as a convolution (of dy, with the weight
// flipped), elsewhere as a product and a col2im scatter.

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

#include "accrue/kernels/cpu/conv.hpp"
#include "accrue/kernels/cpu/lane_masks.hpp"

#include "accrue/framework/error.hpp"

#include "accrue/kernels/common/half.hpp"
#include "accrue/kernels/cpu/bf16_gemm.hpp"
#include "accrue/kernels/cpu/openblas.hpp"
#include "accrue/kernels/cpu/parallel.hpp"
#include "accrue/kernels/cpu/gemm.hpp"

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

namespace accrue::kernels::cpu {
namespace {

// [lo, hi): the output positions whose tap at kernel offset k reads inside [0, in).
struct ValidRange {
  std::int64_t lo, hi;
};

ValidRange valid_outputs(std::int64_t out, std::int64_t in, std::int64_t stride, std::int64_t pad, std::int64_t dilation,
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
void sample_gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
                 std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  constexpr int row_major = 101, no_trans = 111, trans = 112;
  if (M == 0 || N == 0) return;
  if (K == 0) return gemm(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);  // scales C by beta
  openblas().sgemm(row_major, trans_a ? trans : no_trans, trans_b ? trans : no_trans, static_cast<int>(M),
                   static_cast<int>(N), static_cast<int>(K), 1.0f, A, static_cast<int>(lda), B, static_cast<int>(ldb),
                   beta, C, static_cast<int>(ldc));
}

int tasks_for(std::int64_t samples) { return static_cast<int>(std::min<std::int64_t>(num_threads(), samples)); }

// Sample ranges of the tasks.
std::int64_t sample_begin(std::int64_t N, int tasks, int t) { return N * t / tasks; }

// v as U: float32 rounded to bfloat16 bits, bfloat16 bits widened, or as it is.
template <class U, class T>
U as(T v) {
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
bool input_gradient_is_a_convolution(const Window2d& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 && g.pad_h < g.R && g.pad_w < g.S;
}

Window2d input_gradient_window(const Window2d& g) {
  return {.N = g.N, .C = g.K, .H = g.P(), .W = g.Q(), .R = g.R, .S = g.S, .pad_h = g.R - 1 - g.pad_h,
          .pad_w = g.S - 1 - g.pad_w, .K = g.C, .groups = g.groups};
}

// out (C, K / groups, R, S) = w (K, C / groups, R, S) with each group's filters and channels
// swapped and every kernel turned by 180 degrees.
void flip_weight(const float* w, const Window2d& g, float* out) {
  const std::int64_t Cg = g.channels_per_group(), Kg = g.filters_per_group(), R = g.R, S = g.S;
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t k = 0; k < Kg; ++k)
      for (std::int64_t c = 0; c < Cg; ++c)
        for (std::int64_t r = 0; r < R; ++r)
          for (std::int64_t s = 0; s < S; ++s)
            out[(((grp * Cg + c) * Kg + k) * R + (R - 1 - r)) * S + (S - 1 - s)] =
                w[(((grp * Kg + k) * Cg + c) * R + r) * S + s];
}

std::size_t flipped_weight_bytes(const Window2d& g) { return Carve::bytes<float>(g.K * g.patch_size()); }

// Per-thread sums of the weight's gradient beyond the first thread's, which sums into dw itself.
std::size_t partials_bytes(const Window2d& g) {
  return Carve::bytes<float>(std::max(0, tasks_for(g.N) - 1) * g.K * g.patch_size());
}

void add_partials(const float* partials, float* dw, const Window2d& g) {
  const std::int64_t wsize = g.K * g.patch_size();
  for (int t = 1; t < tasks_for(g.N); ++t) {
    const float* part = partials + (t - 1) * wsize;
    for (std::int64_t i = 0; i < wsize; ++i) dw[i] += part[i];
  }
}

// db[k] (+)= the sum of dy over samples and positions of filter k: each sample's positions in 16
// float32 lanes (a loop that vectorises), the samples in double; filters split across the pool.
template <class T>
void backward_bias(const T* dy, float* db, const Window2d& g, bool accumulate) {
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
void im2col_row(const float* x, const Window2d& g, std::int64_t k, float* dst) {
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

}  // namespace

void im2col(const float* x, const Window2d& g, float* col) {
  const std::int64_t PQ = g.P() * g.Q();
  for (std::int64_t k = 0; k < g.patch_size(); ++k) im2col_row(x, g, k, col + k * PQ);
}

void col2im_add(const float* col, const Window2d& g, float* dx) {
  const std::int64_t P = g.P(), Q = g.Q(), Cg = g.channels_per_group();
  for (std::int64_t c = 0; c < Cg; ++c) {
    float* dxc = dx + c * g.H * g.W;
    for (std::int64_t r = 0; r < g.R; ++r) {
      const ValidRange rows = valid_outputs(P, g.H, g.stride_h, g.pad_h, g.dilation_h, r);
      for (std::int64_t s = 0; s < g.S; ++s) {
        const ValidRange cols = valid_outputs(Q, g.W, g.stride_w, g.pad_w, g.dilation_w, s);
        const float* src = col + ((c * g.R + r) * g.S + s) * P * Q;
        for (std::int64_t p = rows.lo; p < rows.hi; ++p) {
          const float* sp = src + p * Q;
          float* d = dxc + g.in_row(p, r) * g.W;
          if (g.stride_w == 1) {
            const std::int64_t offset = g.in_col(0, s);
            for (std::int64_t q = cols.lo; q < cols.hi; ++q) d[q + offset] += sp[q];
          } else {
            for (std::int64_t q = cols.lo; q < cols.hi; ++q) d[g.in_col(q, s)] += sp[q];
          }
        }
      }
    }
  }
}

namespace {

// ---- float32 elsewhere: im2col and OpenBLAS -----------------------------------------------------
// Also the pointwise (1x1) convolutions, whose input already is their im2col matrix, and the input
// gradient of strided or dilated ones.

// One sample's im2col matrix per task (none for a pointwise convolution).
std::size_t col_bytes(const Window2d& g) {
  return g.is_pointwise() ? 0 : Carve::bytes<float>(g.patch_size() * g.P() * g.Q());
}

void im2col_forward(const float* x, const float* w, const float* bias, float* y, const Window2d& g,
                    std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size();
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    auto* col = reinterpret_cast<float*>(workspace + t * col_bytes(g));
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        const float* xg = x + (n * g.C + grp * Cg) * g.H * g.W;
        float* yg = y + (n * g.K + grp * Kg) * PQ;
        if (bias != nullptr)
          for (std::int64_t k = 0; k < Kg; ++k) std::fill(yg + k * PQ, yg + (k + 1) * PQ, bias[grp * Kg + k]);
        const float* B = xg;
        if (!g.is_pointwise()) {
          im2col(xg, g, col);
          B = col;
        }
        sample_gemm(false, false, Kg, PQ, patch, w + grp * Kg * patch, patch, B, PQ, bias != nullptr ? 1.0f : 0.0f, yg,
                    PQ);
      }
    }
  });
}

// Accumulating, a sample's gradient is summed apart and added to dx once, as the implicit form
// does: scattered straight into dx, each window's share would round against the old gradient, and
// two equal backward passes would not give twice one.
std::size_t backward_data_col_bytes(const Window2d& g) {
  return g.is_pointwise() ? 0 : col_bytes(g) + Carve::bytes<float>(g.channels_per_group() * g.H * g.W);
}

void im2col_backward_data(const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate,
                          std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size(), HW = g.H * g.W;
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * backward_data_col_bytes(g)};
    float* col = g.is_pointwise() ? nullptr : carve.take<float>(patch * PQ);
    float* sum = g.is_pointwise() ? nullptr : carve.take<float>(Cg * HW);
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        const float* dyg = dy + (n * g.K + grp * Kg) * PQ;
        float* dxg = dx + (n * g.C + grp * Cg) * HW;
        const float* wg = w + grp * Kg * patch;
        if (g.is_pointwise()) {  // dx (Cg, HW) = Wg^T dy
          sample_gemm(true, false, Cg, PQ, Kg, wg, patch, dyg, PQ, accumulate ? 1.0f : 0.0f, dxg, PQ);
          continue;
        }
        sample_gemm(true, false, patch, PQ, Kg, wg, patch, dyg, PQ, 0.0f, col, PQ);
        float* into = accumulate ? sum : dxg;
        std::fill(into, into + Cg * HW, 0.0f);
        col2im_add(col, g, into);
        if (accumulate)
          for (std::int64_t i = 0; i < Cg * HW; ++i) dxg[i] += sum[i];
      }
    }
  });
}

void im2col_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                            std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size(), wsize = g.K * patch;
  const int tasks = tasks_for(g.N);
  if (g.N == 0) {
    if (!accumulate) std::fill(dw, dw + wsize, 0.0f);
    return;
  }
  auto* partials = reinterpret_cast<float*>(workspace + tasks * col_bytes(g));
  parallel_tasks(tasks, [&](int t) {
    auto* col = reinterpret_cast<float*>(workspace + t * col_bytes(g));
    // Task 0 sums into dw itself (adding to what it holds when accumulating), the others into their own buffer.
    float* out = t == 0 ? dw : partials + (t - 1) * wsize;
    bool first = t != 0 || !accumulate;
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        const float* dyg = dy + (n * g.K + grp * Kg) * PQ;
        const float* xg = x + (n * g.C + grp * Cg) * g.H * g.W;
        const float* B = xg;
        if (!g.is_pointwise()) {
          im2col(xg, g, col);
          B = col;
        }
        // dW_g (Kg, patch) += dy_g (Kg, PQ) col^T (PQ, patch)
        sample_gemm(false, true, Kg, patch, PQ, dyg, PQ, B, PQ, first ? 0.0f : 1.0f, out + grp * Kg * patch, patch);
      }
      first = false;
    }
  });
  add_partials(partials, dw, g);
}

// ---- float32 on AVX-512 or AVX2: an implicit GEMM over the padded image -------------------------
// im2col writes patch-size values for every output position of every sample, which OpenBLAS then
// packs again (and it packs the weight again for every sample). Here entry (position m, tap k) of
// the im2col matrix is read where it lies, xp[position(m) + tap(k)] of the zero-padded image, and
// broadcast against vectors of 16 filters: of the weight, packed once per call, in forward; of the
// output gradient, transposed once per sample, for the weight's gradient. Products accumulate
// along taps (forward) or positions (weight gradient) in registers, with no horizontal sums.

// Packed weight and transposed operands hold filters in rows of a multiple of 16 floats.
std::int64_t lanes16(std::int64_t n) { return (n + 15) / 16 * 16; }

#if defined(__x86_64__)

// A tile's MR x NV accumulators from C (rows ldc apart) when accumulating, else zeros; and back.
template <int MR, int NV>
ACCRUE_TARGET_AVX512 inline void load_tile(__m512 (&acc)[MR][NV], const float* c, std::int64_t ldc, bool accumulate) {
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
}
template <int MR, int NV>
ACCRUE_TARGET_AVX512 inline void store_tile(const __m512 (&acc)[MR][NV], float* c, std::int64_t ldc) {
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

// C (MR rows x 16 NV) (+)= sum over l < L of A(i, l) B(l), A(i, l) = xp[row_off[i] + col_off[l]]
// broadcast, B(l) the NV vectors at b + l ldb. MR x NV accumulators stay in registers for all L.
template <int MR, int NV>
ACCRUE_TARGET_AVX512 void gathered_tile(const float* xp, const std::int32_t* row_off, const std::int32_t* col_off,
                                        std::int64_t L, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                                        bool accumulate) {
  const float* a[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) a[r] = xp + row_off[r];
  __m512 acc[MR][NV];
  load_tile<MR, NV>(acc, c, ldc, accumulate);
  for (std::int64_t l = 0; l < L; ++l) {
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + l * ldb + 16 * v);
    const std::int64_t o = col_off[l];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r][o]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
  store_tile<MR, NV>(acc, c, ldc);
}

// The same 16 columns a row with AVX2: two vectors of 8 per row, 6 rows (12 accumulators, the two
// vectors of B and a broadcast fill the 16 registers; Zen 3's two FMA pipes of 4-cycle latency need
// 8 independent chains).
template <int MR>
ACCRUE_TARGET_AVX2 void gathered_tile8(const float* xp, const std::int32_t* row_off, const std::int32_t* col_off,
                                       std::int64_t L, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                                       bool accumulate) {
  const float* a[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) a[r] = xp + row_off[r];
  __m256 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < 2; ++v) acc[r][v] = accumulate ? _mm256_loadu_ps(c + r * ldc + 8 * v) : _mm256_setzero_ps();
  for (std::int64_t l = 0; l < L; ++l) {
    const __m256 b0 = _mm256_loadu_ps(b + l * ldb), b1 = _mm256_loadu_ps(b + l * ldb + 8);
    const std::int64_t o = col_off[l];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a[r] + o);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < 2; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
}

#endif

// A tile's signature: A's elements read from an image of T, B's of U.
template <class T, class U>
using GatheredTile = void (*)(const T*, const std::int32_t*, const std::int32_t*, std::int64_t, const U*, std::int64_t,
                              float*, std::int64_t, bool);
// A kernel set: run[nv - 1][m - 1] is the tile of m rows and nv vectors of 16 columns, for nv up
// to `widest`, and rows[nv - 1] the most rows of such a tile (more are never asked for).
template <class T, class U>
struct GatheredTiles {
  std::array<std::array<GatheredTile<T, U>, 8>, 4> run{};
  std::array<int, 4> rows{};
  int widest = 0;
};

// AVX-512's rows per tile: 24 accumulators for four vectors, 16 to 24 for fewer (more would spill
// the row pointers, and a 512-bit FMA's latency needs only four independent chains).
constexpr int tile_rows(int nv) { return nv == 4 ? 6 : 8; }

template <class T, class U, template <int, int> class Tile, int... M>
constexpr GatheredTiles<T, U> tiles_of(std::integer_sequence<int, M...>) {
  return {.run = {{{Tile<std::min(M + 1, tile_rows(1)), 1>::run...},
                   {Tile<std::min(M + 1, tile_rows(2)), 2>::run...},
                   {Tile<std::min(M + 1, tile_rows(3)), 3>::run...},
                   {Tile<std::min(M + 1, tile_rows(4)), 4>::run...}}},
          .rows = {tile_rows(1), tile_rows(2), tile_rows(3), tile_rows(4)},
          .widest = 4};
}
#if defined(__x86_64__)
template <int MR, int NV>
struct FloatTile {
  static constexpr auto run = &gathered_tile<MR, NV>;
};
constexpr GatheredTiles<float, float> float_tiles =
    tiles_of<float, float, FloatTile>(std::make_integer_sequence<int, 8>{});
template <int... M>
constexpr GatheredTiles<float, float> avx2_tiles_of(std::integer_sequence<int, M...>) {
  return {.run = {{{&gathered_tile8<std::min(M + 1, 6)>...}}}, .rows = {6, 0, 0, 0}, .widest = 1};
}
constexpr GatheredTiles<float, float> float_tiles_avx2 = avx2_tiles_of(std::make_integer_sequence<int, 8>{});
#else
constexpr GatheredTiles<float, float> float_tiles = {};
constexpr GatheredTiles<float, float> float_tiles_avx2 = {};
#endif

// C (rows x n) (+)= A (rows x L) B (L x n) with A as the tiles', n a multiple of 16, and B and C
// rows n elements apart. Panels as wide as the widest tile, so that a panel of B stays in L2 while
// every row tile reads it.
template <class T, class U>
void gathered_gemm(const GatheredTiles<T, U>& tiles, const T* xp, const std::int32_t* row_off, std::int64_t rows,
                   const std::int32_t* col_off, std::int64_t L, const U* b, std::int64_t n, float* c, bool accumulate) {
  for (std::int64_t j = 0; j < n; j += 16 * tiles.widest) {
    const int nv = static_cast<int>(std::min<std::int64_t>(tiles.widest, (n - j) / 16));
    // Rows split evenly over the fewest tiles: 9 taps as 5 + 4, not 8 + 1 (a tile of one row
    // loads as much of B as it multiplies).
    const int most = tiles.rows[static_cast<std::size_t>(nv - 1)];
    const std::int64_t count = (rows + most - 1) / most;
    for (std::int64_t t = 0; t < count; ++t) {
      const std::int64_t i = rows * t / count;
      const auto m = static_cast<std::size_t>(rows * (t + 1) / count - i);
      tiles.run[static_cast<std::size_t>(nv - 1)][m - 1](xp, row_off + i, col_off, L, b + j, n, c + i * n + j, n,
                                                         accumulate);
    }
  }
}

// The float32 implicit GEMM's kernels: AVX-512 where the processor has it, else AVX2 with FMA.
enum class ImplicitKernel { none, avx2, avx512 };
#if defined(__x86_64__)
ImplicitKernel implicit_kernel() {
  static const ImplicitKernel kernel = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") != 0) return ImplicitKernel::avx512;
    if (__builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0) return ImplicitKernel::avx2;
    return ImplicitKernel::none;
  }();
  return kernel;
}
#else
ImplicitKernel implicit_kernel() { return ImplicitKernel::none; }
#endif
bool implicit_gemm_runs() { return implicit_kernel() != ImplicitKernel::none; }

void gathered_gemm(const float* xp, const std::int32_t* row_off, std::int64_t rows, const std::int32_t* col_off,
                   std::int64_t L, const float* b, std::int64_t n, float* c, bool accumulate) {
  gathered_gemm(implicit_kernel() == ImplicitKernel::avx512 ? float_tiles : float_tiles_avx2, xp, row_off, rows,
                col_off, L, b, n, c, accumulate);
}

#if defined(__x86_64__)
// r[j] = column j of the 16 x 16 block whose row i is r[i]: pairs, then quads within 128-bit lanes,
// then the lanes themselves.
ACCRUE_TARGET_AVX512 inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);
    t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xDD);
    t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
    t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xDD);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
    r[4 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0x88);
    r[12 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0xDD);
  }
}

// 16 values of T at p under `mask`, as float32, and back (bfloat16 rounded to nearest, ties to
// even, NaN kept quiet, as common::bf16_bits_from_float; vcvtneps2bf16 would flush subnormals).
ACCRUE_TARGET_AVX512 inline __m512 load_as_float(const float* p, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, p); }
ACCRUE_TARGET_AVX512 inline __m512 load_as_float(const std::uint16_t* p, __mmask16 mask) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p)), 16));
}
ACCRUE_TARGET_AVX512 inline void store_from_float(float* p, __mmask16 mask, __m512 v) { _mm512_mask_storeu_ps(p, mask, v); }
ACCRUE_TARGET_AVX512 inline void store_from_float(std::uint16_t* p, __mmask16 mask, __m512 v) {
  const __m512i u = _mm512_castps_si512(v), one = _mm512_set1_epi32(1);
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), _mm512_and_si512(_mm512_srli_epi32(u, 16), one)),
      16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  const __m512i bits = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), rounded, quiet);
  // The low halves gathered by a permute, not vpmovdw: its masked store to memory, which compilers
  // fold it into, is microcoded on AMD's Zen 4 (a third of a bfloat16 convolution's time).
  const __m512i low_halves = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30, 28, 26, 24, 22, 20,
                                              18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  _mm256_mask_storeu_epi16(p, mask, _mm512_castsi512_si256(_mm512_permutexvar_epi16(low_halves, bits)));
}

// dst[j ld_dst + i] = src[i ld_src + j] (+ bias[j]) (+ dst's value when accumulating), for
// i < rows, j < cols, dst float32 or bfloat16 (rounded once): 16 x 16 blocks transposed in
// registers, edges under masks.
template <class T>
ACCRUE_TARGET_AVX512 void transpose(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t cols, T* dst,
                                    std::int64_t ld_dst, const float* bias, bool accumulate) {
  for (std::int64_t i0 = 0; i0 < rows; i0 += 16) {
    const std::int64_t mi = std::min<std::int64_t>(16, rows - i0);
    const __mmask16 out_mask = first_lanes16(mi);
    for (std::int64_t j0 = 0; j0 < cols; j0 += 16) {
      const std::int64_t mj = std::min<std::int64_t>(16, cols - j0);
      const __mmask16 in_mask = first_lanes16(mj);
      // Rows beyond the edge repeat its last row, into lanes the stores leave out.
      __m512 r[16];
      for (std::int64_t a = 0; a < 16; ++a)
        r[a] = _mm512_maskz_loadu_ps(in_mask, src + (i0 + std::min(a, mi - 1)) * ld_src + j0);
      transpose16(r);
      for (std::int64_t b = 0; b < mj; ++b) {
        T* d = dst + (j0 + b) * ld_dst + i0;
        __m512 v = r[b];
        if (bias != nullptr) v = _mm512_add_ps(v, _mm512_set1_ps(bias[j0 + b]));
        if (accumulate) v = _mm512_add_ps(v, load_as_float(d, out_mask));
        store_from_float(d, out_mask, v);
      }
    }
  }
}

// The same in float32 with AVX2: 8 x 8 blocks, ragged edges loaded under masks.
ACCRUE_TARGET_AVX2 inline void transpose8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    r[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x20);
    t[4 + i] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x31);
  }
  for (int i = 0; i < 8; ++i) r[i] = t[i];
}

ACCRUE_TARGET_AVX2 void transpose_avx2(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t cols,
                                       float* dst, std::int64_t ld_dst, const float* bias, bool accumulate) {
  for (std::int64_t i0 = 0; i0 < rows; i0 += 8) {
    const std::int64_t mi = std::min<std::int64_t>(8, rows - i0);
    const __m256i out_mask = first_lanes8(mi);
    for (std::int64_t j0 = 0; j0 < cols; j0 += 8) {
      const std::int64_t mj = std::min<std::int64_t>(8, cols - j0);
      const __m256i in_mask = first_lanes8(mj);
      __m256 r[8];
      for (std::int64_t a = 0; a < 8; ++a)
        r[a] = _mm256_maskload_ps(src + (i0 + std::min(a, mi - 1)) * ld_src + j0, in_mask);
      transpose8(r);
      for (std::int64_t b = 0; b < mj; ++b) {
        float* d = dst + (j0 + b) * ld_dst + i0;
        __m256 v = r[b];
        if (bias != nullptr) v = _mm256_add_ps(v, _mm256_set1_ps(bias[j0 + b]));
        if (accumulate) v = _mm256_add_ps(v, _mm256_maskload_ps(d, out_mask));
        store_first8(d, mi, v);
      }
    }
  }
}
#else
template <class T>
void transpose(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t cols, T* dst,
               std::int64_t ld_dst, const float* bias, bool accumulate) {
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      T& d = dst[j * ld_dst + i];
      d = as<T>((accumulate ? as<float>(d) : 0.0f) + src[i * ld_src + j] + (bias ? bias[j] : 0.0f));
    }
}
#endif

// transpose in float32 with the implicit GEMM's instruction set.
void transpose_floats(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t cols, float* dst,
                      std::int64_t ld_dst, const float* bias, bool accumulate) {
#if defined(__x86_64__)
  if (implicit_kernel() == ImplicitKernel::avx2)
    return transpose_avx2(src, ld_src, rows, cols, dst, ld_dst, bias, accumulate);
#endif
  transpose(src, ld_src, rows, cols, dst, ld_dst, bias, accumulate);
}

// The weight of each group transposed, (patch x Kg) in rows of lanes16(Kg) floats, zeros beside.
std::size_t packed_weight_bytes(const Window2d& g) {
  return Carve::bytes<float>(g.groups * g.patch_size() * lanes16(g.filters_per_group()));
}
void pack_weight(const float* w, const Window2d& g, float* out) {
  const std::int64_t Kg = g.filters_per_group(), Kp = lanes16(Kg), patch = g.patch_size();
  std::fill(out, out + g.groups * patch * Kp, 0.0f);
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    transpose_floats(w + grp * Kg * patch, patch, Kg, patch, out + grp * patch * Kp, Kp, nullptr, false);
}

// Offsets into a padded group of every output position and of `tap_count` taps (the patch's, or
// of its channel pairs).
void fill_offsets(const PaddedGroup& pad, const Window2d& g, std::int32_t* positions, std::int32_t* taps,
                  std::int64_t tap_count) {
  for (std::int64_t m = 0; m < g.P() * g.Q(); ++m) positions[m] = static_cast<std::int32_t>(pad.position(g, m));
  for (std::int64_t k = 0; k < tap_count; ++k) taps[k] = static_cast<std::int32_t>(pad.tap(g, k));
}

std::size_t offsets_bytes(const Window2d& g, std::int64_t tap_count) {
  return Carve::bytes<std::int32_t>(g.P() * g.Q()) + Carve::bytes<std::int32_t>(tap_count);
}

// What every implicit GEMM task carves from its workspace: the padded image (cleared, so that its
// padding stays zero), a positions x filters matrix (the output, or dy transposed) and the offsets
// of positions and taps.
struct ImplicitTask {
  float* xp;
  float* transposed;
  std::int32_t* positions;
  std::int32_t* taps;

  static std::size_t bytes(const Window2d& g) {
    return Carve::bytes<float>(PaddedGroup{g}.values(g)) +
           Carve::bytes<float>(g.P() * g.Q() * lanes16(g.filters_per_group())) + offsets_bytes(g, g.patch_size());
  }
  ImplicitTask(Carve& carve, const PaddedGroup& pad, const Window2d& g)
      : xp(carve.take<float>(pad.values(g))),
        transposed(carve.take<float>(g.P() * g.Q() * lanes16(g.filters_per_group()))),
        positions(carve.take<std::int32_t>(g.P() * g.Q())),
        taps(carve.take<std::int32_t>(g.patch_size())) {
    pad.clear(g, xp);
    fill_offsets(pad, g, positions, taps, g.patch_size());
  }
};

// y (+)= conv(x, the packed weight) + bias: each sample's group as y^T (positions x filters),
// transposed into y.
void implicit_forward(const float* x, const float* packed, const float* bias, float* y, bool accumulate,
                      const Window2d& g, std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group(), Kp = lanes16(Kg), patch = g.patch_size();
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * ImplicitTask::bytes(g)};
    const PaddedGroup pad{g};
    const ImplicitTask task{carve, pad, g};
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, DType::f32, g, n, grp, task.xp);
        gathered_gemm(task.xp, task.positions, PQ, task.taps, patch, packed + grp * patch * Kp, Kp, task.transposed,
                      false);
        transpose_floats(task.transposed, Kp, PQ, Kg, y + (n * g.K + grp * Kg) * PQ, PQ,
                         bias != nullptr ? bias + grp * Kg : nullptr, accumulate);
      }
  });
}

// ImplicitTask's pieces and the thread's dW^T sums.
std::size_t implicit_filter_task_bytes(const Window2d& g) {
  return ImplicitTask::bytes(g) + Carve::bytes<float>(g.groups * g.patch_size() * lanes16(g.filters_per_group()));
}

// dw (+)= the sum of the threads' dW^T (groups x patch x lanes16(Kg)).
void add_transposed_sums(const std::vector<float*>& sums, float* dw, const Window2d& g, bool accumulate) {
  const std::int64_t Kg = g.filters_per_group(), Kp = lanes16(Kg), patch = g.patch_size();
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t k = 0; k < Kg; ++k) {
      float* out = dw + (grp * Kg + k) * patch;
      for (std::int64_t i = 0; i < patch; ++i) {
        float s = 0.0f;
        for (const float* sum : sums) s += sum[(grp * patch + i) * Kp + k];
        out[i] = accumulate ? out[i] + s : s;
      }
    }
}

// dw (+)= the weight's gradient: each thread sums dW^T (taps x filters) over its samples, the
// products reading the padded input in place against dy transposed (positions x filters).
void implicit_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                              std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group(), Kp = lanes16(Kg), patch = g.patch_size();
  const int tasks = tasks_for(g.N);
  std::vector<float*> sums(static_cast<std::size_t>(tasks));
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * implicit_filter_task_bytes(g)};
    const PaddedGroup pad{g};
    const ImplicitTask task{carve, pad, g};
    float* sum = sums[static_cast<std::size_t>(t)] = carve.take<float>(g.groups * patch * Kp);
    std::fill(task.transposed, task.transposed + PQ * Kp, 0.0f);  // dy^T: the columns beyond Kg stay zero
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, DType::f32, g, n, grp, task.xp);
        transpose_floats(dy + (n * g.K + grp * Kg) * PQ, PQ, Kg, PQ, task.transposed, Kp, nullptr, false);
        gathered_gemm(task.xp, task.taps, patch, task.positions, PQ, task.transposed, Kp, sum + grp * patch * Kp,
                      n != sample_begin(g.N, tasks, t));
      }
  });
  add_transposed_sums(sums, dw, g, accumulate);
}

// ---- float32 Winograd F(2x2, 3x3) ---------------------------------------------------------------
// A 3x3 convolution of stride 1 computes each 2x2 block of outputs from a 4x4 block of its padded
// input with 16 multiplications per channel and filter instead of 36 (Lavin and Gray's minimal
// filtering): the input block d and the filter g are transformed, V = B^T d B and U = G g G^T, and
// for each of the 16 elements the products summed over channels are a product of a
// (tiles x channels) and a (channels x filters) matrix, which the implicit GEMM's tiles run; the
// result M comes back as Y = A^T M A. G halves, B and A add and subtract, so the transforms round
// little (tests/framework/test_conv_pool.cpp holds every form to 1e-5 of a double-precision sum).
// The input is laid out channels last, so that every transform runs along channels (or filters) in
// whole vectors.

// Tiles and padded sizes of one sample's group. Tiles are transformed and multiplied a band of
// `band_rows` rows of tiles at a time, whose V and M (16 x tiles x (Cp + Kp) floats) fit in about
// 384 KB, so that they stay in L2 between the transforms and the products whatever the image size
// (the CNN's 14 x 14 images take one band).
struct WinogradShape {
  std::int64_t tiles_h, tiles_w, tiles, Hw, Ww, Cg, Cp, Kg, Kp, band_rows, band_tiles;
  explicit WinogradShape(const Window2d& g)
      : tiles_h((g.P() + 1) / 2),
        tiles_w((g.Q() + 1) / 2),
        tiles(tiles_h * tiles_w),
        // Rows and columns the last tiles read, beyond the image's padding when P or Q is odd.
        Hw(2 * tiles_h + 2),
        Ww(2 * tiles_w + 2),
        Cg(g.channels_per_group()),
        Cp(lanes16(Cg)),
        Kg(g.filters_per_group()),
        Kp(lanes16(Kg)),
        band_rows(std::clamp<std::int64_t>((384 << 10) / (16 * std::max<std::int64_t>(tiles_w, 1) * (Cp + Kp) * 4), 1,
                                           std::max<std::int64_t>(tiles_h, 1))),
        band_tiles(band_rows * tiles_w) {}
};

// 3x3, stride 1, no dilation, and products at least 16 deep into at least 16 filters (shallower,
// the tiles load and store as much as they multiply).
bool winograd_fits(const Window2d& g) {
  return g.R == 3 && g.S == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
         g.channels_per_group() >= 16 && g.filters_per_group() >= 16;
}

// U = G g G^T of every filter and channel of each group: groups x 16 x (Cg x Kp), zeros beside.
std::size_t winograd_weight_bytes(const Window2d& g) {
  const WinogradShape ws{g};
  return Carve::bytes<float>(g.groups * 16 * ws.Cg * ws.Kp);
}
void winograd_weight(const float* weight, const Window2d& g, float* u) {
  const WinogradShape ws{g};
  std::fill(u, u + g.groups * 16 * ws.Cg * ws.Kp, 0.0f);
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t k = 0; k < ws.Kg; ++k)
      for (std::int64_t c = 0; c < ws.Cg; ++c) {
        const float* f = weight + ((grp * ws.Kg + k) * ws.Cg + c) * 9;
        float t[4][3];  // G g
        for (int j = 0; j < 3; ++j) {
          t[0][j] = f[j];
          t[1][j] = 0.5f * (f[j] + f[3 + j] + f[6 + j]);
          t[2][j] = 0.5f * (f[j] - f[3 + j] + f[6 + j]);
          t[3][j] = f[6 + j];
        }
        for (int i = 0; i < 4; ++i) {
          const float e[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]), 0.5f * (t[i][0] - t[i][1] + t[i][2]),
                              t[i][2]};
          for (int j = 0; j < 4; ++j) u[((grp * 16 + i * 4 + j) * ws.Cg + c) * ws.Kp + k] = e[j];
        }
      }
}

// What each task carves: the padded image channels last (cleared once, so that its padding stays
// zero), a band's V (16 x band_tiles x Cp) and M (16 x band_tiles x Kp), Y^T (whole tiles'
// positions x Kp) and the GEMMs' offsets.
struct WinogradTask {
  float* xp;
  float* v;
  float* m;
  float* yt;
  std::int32_t* tile_offsets;
  std::int32_t* channel_offsets;

  static std::size_t bytes(const Window2d& g) {
    const WinogradShape ws{g};
    return Carve::bytes<float>(ws.Hw * ws.Ww * ws.Cp) + Carve::bytes<float>(16 * ws.band_tiles * ws.Cp) +
           Carve::bytes<float>(16 * ws.band_tiles * ws.Kp) + Carve::bytes<float>(4 * ws.tiles * ws.Kp) +
           Carve::bytes<std::int32_t>(ws.band_tiles) + Carve::bytes<std::int32_t>(ws.Cg);
  }
  WinogradTask(Carve& carve, const WinogradShape& ws)
      : xp(carve.take<float>(ws.Hw * ws.Ww * ws.Cp)),
        v(carve.take<float>(16 * ws.band_tiles * ws.Cp)),
        m(carve.take<float>(16 * ws.band_tiles * ws.Kp)),
        yt(carve.take<float>(4 * ws.tiles * ws.Kp)),
        tile_offsets(carve.take<std::int32_t>(ws.band_tiles)),
        channel_offsets(carve.take<std::int32_t>(ws.Cg)) {
    std::fill(xp, xp + ws.Hw * ws.Ww * ws.Cp, 0.0f);
    for (std::int64_t t = 0; t < ws.band_tiles; ++t) tile_offsets[t] = static_cast<std::int32_t>(t * ws.Cp);
    for (std::int64_t c = 0; c < ws.Cg; ++c) channel_offsets[c] = static_cast<std::int32_t>(c);
  }
  // Group `grp` of sample n into xp, channels last, inside the padding.
  void fill(const float* x, const Window2d& g, const WinogradShape& ws, std::int64_t n, std::int64_t grp) const {
    const std::int64_t HW = g.H * g.W;
    const float* xg = x + (n * g.C + grp * ws.Cg) * HW;
    for (std::int64_t h = 0; h < g.H; ++h)
      transpose_floats(xg + h * g.W, HW, ws.Cg, g.W, xp + ((h + g.pad_h) * ws.Ww + g.pad_w) * ws.Cp, ws.Cp, nullptr,
                       false);
  }
};

// V = B^T d B for every tile of rows [ti0, ti1) and channel, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0;
// 0 1 0 -1]. (ivdep: the 32 pointers are more than GCC checks for overlap before it vectorizes.)
void winograd_input(const float* xp, const WinogradShape& ws, std::int64_t ti0, std::int64_t ti1, float* v) {
  const std::int64_t plane = ws.band_tiles * ws.Cp;
  for (std::int64_t ti = ti0; ti < ti1; ++ti)
    for (std::int64_t tj = 0; tj < ws.tiles_w; ++tj) {
      const float* d[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) d[i][j] = xp + ((2 * ti + i) * ws.Ww + 2 * tj + j) * ws.Cp;
      float* out[16];
      for (int e = 0; e < 16; ++e) out[e] = v + e * plane + ((ti - ti0) * ws.tiles_w + tj) * ws.Cp;
#pragma GCC ivdep
      for (std::int64_t c = 0; c < ws.Cp; ++c) {
        float t[4][4];  // B^T d
        for (int j = 0; j < 4; ++j) {
          t[0][j] = d[0][j][c] - d[2][j][c];
          t[1][j] = d[1][j][c] + d[2][j][c];
          t[2][j] = d[2][j][c] - d[1][j][c];
          t[3][j] = d[1][j][c] - d[3][j][c];
        }
        for (int i = 0; i < 4; ++i) {
          out[4 * i][c] = t[i][0] - t[i][2];
          out[4 * i + 1][c] = t[i][1] + t[i][2];
          out[4 * i + 2][c] = t[i][2] - t[i][1];
          out[4 * i + 3][c] = t[i][1] - t[i][3];
        }
      }
    }
}

// Y = A^T M A for every tile of rows [ti0, ti1) and filter, A^T = [1 1 1 0; 0 1 -1 -1], into Y^T,
// whole tiles: positions (2 tiles_h) x (2 tiles_w), Kp apart.
void winograd_output(const float* m, const WinogradShape& ws, std::int64_t ti0, std::int64_t ti1, float* yt) {
  const std::int64_t plane = ws.band_tiles * ws.Kp, Qw = 2 * ws.tiles_w;
  for (std::int64_t ti = ti0; ti < ti1; ++ti)
    for (std::int64_t tj = 0; tj < ws.tiles_w; ++tj) {
      const float* in[16];
      for (int e = 0; e < 16; ++e) in[e] = m + e * plane + ((ti - ti0) * ws.tiles_w + tj) * ws.Kp;
      float* y00 = yt + (2 * ti * Qw + 2 * tj) * ws.Kp;
      float* y01 = y00 + ws.Kp;
      float* y10 = y00 + Qw * ws.Kp;
      float* y11 = y10 + ws.Kp;
#pragma GCC ivdep
      for (std::int64_t k = 0; k < ws.Kp; ++k) {
        float s[2][4];  // A^T M
        for (int j = 0; j < 4; ++j) {
          s[0][j] = in[j][k] + in[4 + j][k] + in[8 + j][k];
          s[1][j] = in[4 + j][k] - in[8 + j][k] - in[12 + j][k];
        }
        y00[k] = s[0][0] + s[0][1] + s[0][2];
        y01[k] = s[0][1] - s[0][2] - s[0][3];
        y10[k] = s[1][0] + s[1][1] + s[1][2];
        y11[k] = s[1][1] - s[1][2] - s[1][3];
      }
    }
}

// y (+)= conv(x, the transformed weight u) + bias, one sample's group at a time.
void winograd_forward(const float* x, const float* u, const float* bias, float* y, bool accumulate, const Window2d& g,
                      std::byte* workspace) {
  const WinogradShape ws{g};
  const std::int64_t PQ = g.P() * g.Q();
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * WinogradTask::bytes(g)};
    const WinogradTask task{carve, ws};
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        task.fill(x, g, ws, n, grp);
        for (std::int64_t ti0 = 0; ti0 < ws.tiles_h; ti0 += ws.band_rows) {
          const std::int64_t ti1 = std::min(ws.tiles_h, ti0 + ws.band_rows), count = (ti1 - ti0) * ws.tiles_w;
          winograd_input(task.xp, ws, ti0, ti1, task.v);
          for (std::int64_t e = 0; e < 16; ++e)
            gathered_gemm(task.v + e * ws.band_tiles * ws.Cp, task.tile_offsets, count, task.channel_offsets, ws.Cg,
                          u + (grp * 16 + e) * ws.Cg * ws.Kp, ws.Kp, task.m + e * ws.band_tiles * ws.Kp, false);
          winograd_output(task.m, ws, ti0, ti1, task.yt);
        }
        // Y^T's rows are whole tiles' positions: with Q even, those of the first P rows are y's.
        float* yg = y + (n * g.K + grp * ws.Kg) * PQ;
        const float* bg = bias != nullptr ? bias + grp * ws.Kg : nullptr;
        if (g.Q() % 2 == 0) transpose_floats(task.yt, ws.Kp, PQ, ws.Kg, yg, PQ, bg, accumulate);
        else
          for (std::int64_t p = 0; p < g.P(); ++p)
            transpose_floats(task.yt + p * 2 * ws.tiles_w * ws.Kp, ws.Kp, g.Q(), ws.Kg, yg + p * g.Q(), PQ, bg,
                             accumulate);
      }
  });
}

// The weight's gradient the same way: with dM = A dY A^T the gradient of M = U (.) V, each
// element's dU (channels x filters) sums V^T dM over the tiles of every sample, a product as deep as
// the tiles, and dW = G^T dU G. The output's gradient is transposed once per sample into Y^T's
// whole-tile layout, zeros past an odd P or Q.

// What each task carves beyond WinogradTask's (whose M holds dM, and whose offsets serve with rows
// and columns swapped): the thread's dU sums, groups x 16 x (Cg x Kp).
std::size_t winograd_filter_task_bytes(const Window2d& g) {
  const WinogradShape ws{g};
  return WinogradTask::bytes(g) + Carve::bytes<float>(g.groups * 16 * ws.Cg * ws.Kp);
}

// dM = A dY A^T for every tile of rows [ti0, ti1) and filter, A = [1 0; 1 1; 1 -1; 0 -1], from
// Y^T's whole tiles.
void winograd_output_gradient(const float* yt, const WinogradShape& ws, std::int64_t ti0, std::int64_t ti1,
                              float* dm) {
  const std::int64_t plane = ws.band_tiles * ws.Kp, Qw = 2 * ws.tiles_w;
  for (std::int64_t ti = ti0; ti < ti1; ++ti)
    for (std::int64_t tj = 0; tj < ws.tiles_w; ++tj) {
      const float* y00 = yt + (2 * ti * Qw + 2 * tj) * ws.Kp;
      const float* y01 = y00 + ws.Kp;
      const float* y10 = y00 + Qw * ws.Kp;
      const float* y11 = y10 + ws.Kp;
      float* out[16];
      for (int e = 0; e < 16; ++e) out[e] = dm + e * plane + ((ti - ti0) * ws.tiles_w + tj) * ws.Kp;
#pragma GCC ivdep
      for (std::int64_t k = 0; k < ws.Kp; ++k) {
        const float a[4][2] = {{y00[k], y01[k]},
                               {y00[k] + y10[k], y01[k] + y11[k]},
                               {y00[k] - y10[k], y01[k] - y11[k]},
                               {-y10[k], -y11[k]}};  // A dY
        for (int i = 0; i < 4; ++i) {
          out[4 * i][k] = a[i][0];
          out[4 * i + 1][k] = a[i][0] + a[i][1];
          out[4 * i + 2][k] = a[i][0] - a[i][1];
          out[4 * i + 3][k] = -a[i][1];
        }
      }
    }
}

// dw (+)= G^T dU G of the threads' summed dU, G^T = [1 .5 .5 0; 0 .5 -.5 0; 0 .5 .5 1].
void add_winograd_filter_sums(const std::vector<float*>& sums, float* dw, const Window2d& g, bool accumulate) {
  const WinogradShape ws{g};
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t c = 0; c < ws.Cg; ++c)
      for (std::int64_t k = 0; k < ws.Kg; ++k) {
        float d[4][4];
        for (int e = 0; e < 16; ++e) {
          float v = 0.0f;
          for (const float* sum : sums) v += sum[((grp * 16 + e) * ws.Cg + c) * ws.Kp + k];
          d[e / 4][e % 4] = v;
        }
        float t[3][4];  // G^T dU
        for (int j = 0; j < 4; ++j) {
          t[0][j] = d[0][j] + 0.5f * (d[1][j] + d[2][j]);
          t[1][j] = 0.5f * (d[1][j] - d[2][j]);
          t[2][j] = 0.5f * (d[1][j] + d[2][j]) + d[3][j];
        }
        float* out = dw + ((grp * ws.Kg + k) * ws.Cg + c) * 9;
        for (int i = 0; i < 3; ++i) {
          const float row[3] = {t[i][0] + 0.5f * (t[i][1] + t[i][2]), 0.5f * (t[i][1] - t[i][2]),
                                0.5f * (t[i][1] + t[i][2]) + t[i][3]};
          for (int j = 0; j < 3; ++j) out[i * 3 + j] = accumulate ? out[i * 3 + j] + row[j] : row[j];
        }
      }
}

void winograd_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                              std::byte* workspace) {
  const WinogradShape ws{g};
  const std::int64_t PQ = g.P() * g.Q(), Qw = 2 * ws.tiles_w;
  const int tasks = tasks_for(g.N);
  if (tasks == 0) {
    if (!accumulate) std::fill(dw, dw + g.K * ws.Cg * 9, 0.0f);
    return;
  }
  std::vector<float*> sums(static_cast<std::size_t>(tasks));
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * winograd_filter_task_bytes(g)};
    const WinogradTask task{carve, ws};
    float* sum = sums[static_cast<std::size_t>(t)] = carve.take<float>(g.groups * 16 * ws.Cg * ws.Kp);
    std::fill(task.yt, task.yt + 4 * ws.tiles * ws.Kp, 0.0f);  // past P, Q and Kg: zeros, never written
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        task.fill(x, g, ws, n, grp);
        const float* dyg = dy + (n * g.K + grp * ws.Kg) * PQ;
        if (g.Q() % 2 == 0) transpose_floats(dyg, PQ, ws.Kg, PQ, task.yt, ws.Kp, nullptr, false);
        else
          for (std::int64_t p = 0; p < g.P(); ++p)
            transpose_floats(dyg + p * g.Q(), PQ, ws.Kg, g.Q(), task.yt + p * Qw * ws.Kp, ws.Kp, nullptr, false);
        for (std::int64_t ti0 = 0; ti0 < ws.tiles_h; ti0 += ws.band_rows) {
          const std::int64_t ti1 = std::min(ws.tiles_h, ti0 + ws.band_rows), count = (ti1 - ti0) * ws.tiles_w;
          winograd_input(task.xp, ws, ti0, ti1, task.v);
          winograd_output_gradient(task.yt, ws, ti0, ti1, task.m);
          for (std::int64_t e = 0; e < 16; ++e)
            gathered_gemm(task.v + e * ws.band_tiles * ws.Cp, task.channel_offsets, ws.Cg, task.tile_offsets, count,
                          task.m + e * ws.band_tiles * ws.Kp, ws.Kp, sum + (grp * 16 + e) * ws.Cg * ws.Kp,
                          n != sample_begin(g.N, tasks, t) || ti0 != 0);
        }
      }
  });
  add_winograd_filter_sums(sums, dw, g, accumulate);
}

std::atomic<Conv2dForm> pinned_form{Conv2dForm::automatic};

// Whether an implicit GEMM the processor can run (`available`) runs a pass whose output has
// `channels` per group, which fill that many lanes of its vectors of 16: unless a form is pinned,
// where it is `preferred` to the other form, for 16 or more channels. Pointwise convolutions need no
// im2col, so they stay a plain product. Pinned Winograd, passes it cannot run choose as here.
bool runs_implicit(const Window2d& g, std::int64_t channels, bool available, bool preferred) {
  if (!available) return false;
  switch (pinned_form.load()) {
    case Conv2dForm::im2col: return false;
    case Conv2dForm::implicit_gemm: return true;
    case Conv2dForm::automatic:
    case Conv2dForm::winograd: break;
  }
  return preferred && !g.is_pointwise() && channels >= 16;
}
// Whether a pass (forward, the weight's gradient, or the input's gradient run as a forward pass)
// takes the Winograd form: where it fits, unless another form is pinned, with AVX2, where
// bench/conv_shapes measured it ahead of the implicit GEMM (the CNN's second convolution at batch
// 64 on a Zen 3: forward 1.75-1.76 against 2.70-2.74 ms, with the backward pass 5.48-5.60 against
// 8.23-8.39 ms). AVX-512 keeps the implicit GEMM, the form measured there, until Winograd is
// measured on such a processor.
bool runs_winograd(const Window2d& g) {
  if (!implicit_gemm_runs() || !winograd_fits(g)) return false;
  switch (pinned_form.load()) {
    case Conv2dForm::im2col:
    case Conv2dForm::implicit_gemm: return false;
    case Conv2dForm::winograd: return true;
    case Conv2dForm::automatic: break;
  }
  return implicit_kernel() == ImplicitKernel::avx2;
}
bool input_gradient_runs_winograd(const Window2d& g) {
  return input_gradient_is_a_convolution(g) && runs_winograd(input_gradient_window(g));
}
// In float32 with AVX-512 OpenBLAS stays ahead on products of depth under 16 (a 3x3 kernel over
// one channel: bench/conv_shapes' first convolution), where the implicit GEMM's tiles load and store
// as much as they multiply. With AVX2 the two forms' forward passes there take the same time and
// the implicit weight gradient is faster (0.90 against 1.13 ms for forward and backward at batch 64
// on a Zen 3), so AVX2 takes the implicit form at any depth.
bool forward_runs_implicit(const Window2d& g) {
  return runs_implicit(g, g.filters_per_group(), implicit_gemm_runs(),
                       g.patch_size() >= 16 || implicit_kernel() == ImplicitKernel::avx2);
}
bool input_gradient_runs_implicit(const Window2d& g) {
  return input_gradient_is_a_convolution(g) &&
         runs_implicit(g, g.channels_per_group(), implicit_gemm_runs(), g.filters_per_group() * g.R * g.S >= 16);
}

}  // namespace

bool implicit_gemm_available() { return implicit_gemm_runs(); }

void pin_conv2d_form(Conv2dForm form) {
  if ((form == Conv2dForm::implicit_gemm || form == Conv2dForm::winograd) && !implicit_gemm_runs())
    throw DeviceError(
        "pin_conv2d_form: the implicit GEMM and Winograd convolutions need AVX-512 or AVX2 with FMA, which this "
        "processor lacks");
  pinned_form = form;
}

ConvWorkspaceBytes conv2d_workspace_bytes(const Window2d& g) {
  const auto all = [&](std::size_t per_task) { return static_cast<std::size_t>(tasks_for(g.N)) * per_task; };
  const std::size_t im2col = all(col_bytes(g));
  const Window2d t = input_gradient_window(g);
  const std::size_t forward = runs_winograd(g)          ? winograd_weight_bytes(g) + all(WinogradTask::bytes(g))
                              : forward_runs_implicit(g) ? packed_weight_bytes(g) + all(ImplicitTask::bytes(g))
                                                         : im2col;
  const std::size_t backward_data =
      input_gradient_runs_winograd(g)   ? flipped_weight_bytes(g) + winograd_weight_bytes(t) + all(WinogradTask::bytes(t))
      : input_gradient_runs_implicit(g) ? flipped_weight_bytes(g) + packed_weight_bytes(t) + all(ImplicitTask::bytes(t))
                                        : all(backward_data_col_bytes(g));
  const std::size_t backward_filter = runs_winograd(g)          ? all(winograd_filter_task_bytes(g))
                                      : forward_runs_implicit(g) ? all(implicit_filter_task_bytes(g))
                                                                 : im2col + partials_bytes(g);
  return {.forward = forward, .backward_data = backward_data, .backward_filter = backward_filter};
}

void conv2d_forward(const float* x, const float* w, const float* bias, float* y, const Window2d& g,
                    std::byte* workspace) {
  if (runs_winograd(g)) {
    auto* u = reinterpret_cast<float*>(workspace);
    winograd_weight(w, g, u);
    return winograd_forward(x, u, bias, y, false, g, workspace + winograd_weight_bytes(g));
  }
  if (!forward_runs_implicit(g)) return im2col_forward(x, w, bias, y, g, workspace);
  auto* packed = reinterpret_cast<float*>(workspace);
  pack_weight(w, g, packed);
  implicit_forward(x, packed, bias, y, false, g, workspace + packed_weight_bytes(g));
}

void conv2d_backward_data(const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate,
                          std::byte* workspace) {
  const bool winograd = input_gradient_runs_winograd(g);
  if (!winograd && !input_gradient_runs_implicit(g)) return im2col_backward_data(dy, w, dx, g, accumulate, workspace);
  const Window2d t = input_gradient_window(g);
  auto* flipped = reinterpret_cast<float*>(workspace);
  flip_weight(w, g, flipped);
  std::byte* rest = workspace + flipped_weight_bytes(g);
  auto* packed = reinterpret_cast<float*>(rest);
  if (winograd) {
    winograd_weight(flipped, t, packed);
    return winograd_forward(dy, packed, nullptr, dx, accumulate, t, rest + winograd_weight_bytes(t));
  }
  pack_weight(flipped, t, packed);
  implicit_forward(dy, packed, nullptr, dx, accumulate, t, rest + packed_weight_bytes(t));
}

void conv2d_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                            std::byte* workspace) {
  if (runs_winograd(g)) return winograd_backward_filter(dy, x, dw, g, accumulate, workspace);
  if (!forward_runs_implicit(g)) return im2col_backward_filter(dy, x, dw, g, accumulate, workspace);
  implicit_backward_filter(dy, x, dw, g, accumulate, workspace);
}

void conv2d_backward_bias(const float* dy, float* db, const Window2d& g, bool accumulate) {
  backward_bias(dy, db, g, accumulate);
}

// ---- bfloat16 ------------------------------------------------------------------------------------
// The same loops with bfloat16 products: each sample's im2col matrix is written straight into the
// pair layout the bfloat16 kernels read (Bf16B), and the weight's packs are made once per call, or
// once per accumulation window when parameter packs are open.

namespace {

// The bfloat16 kernels need AVX-512 (AVX-512 BF16 or AMX), so their packing may use it too: rows of
// a small image (14, 28 values) are shorter than the vector loops compilers make, which then run
// scalar; masked loads and stores take a whole row in one or two steps.
#if defined(__x86_64__)

// out[q] = Bf16B::pair(a[q], b[q]) for q < n.
ACCRUE_TARGET_AVX512 void interleave(const std::uint16_t* a, const std::uint16_t* b, std::uint32_t* out, std::int64_t n) {
  for (std::int64_t q = 0; q < n; q += 16) {
    const __mmask16 m = n - q >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (n - q)) - 1u);
    const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, a + q));
    const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, b + q));
    _mm512_mask_storeu_epi32(out + q, m, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
  }
}

// out[n] = the 32-bit word at a + taps[n] (two neighbouring bfloat16 values) for n < count; a
// gather pays for itself from a whole vector of taps (a 3x3 kernel on one channel has nine).
ACCRUE_TARGET_AVX512 void gather_words(const std::uint16_t* a, const std::int32_t* taps, std::uint32_t* out,
                                       std::int64_t count) {
  if (count < 16) {
    for (std::int64_t n = 0; n < count; ++n) std::memcpy(out + n, a + taps[n], 4);
    return;
  }
  for (std::int64_t n = 0; n < count; n += 16) {
    const __mmask16 m = count - n >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (count - n)) - 1u);
    const __m512i at = _mm512_maskz_loadu_epi32(m, taps + n);
    _mm512_mask_storeu_epi32(out + n, m, _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, at, a, 2));
  }
}
#else
void interleave(const std::uint16_t* a, const std::uint16_t* b, std::uint32_t* out, std::int64_t n) {
  for (std::int64_t q = 0; q < n; ++q) out[q] = Bf16B::pair(a[q], b[q]);
}
void gather_words(const std::uint16_t* a, const std::int32_t* taps, std::uint32_t* out, std::int64_t count) {
  for (std::int64_t n = 0; n < count; ++n) std::memcpy(out + n, a + taps[n], 4);
}
#endif

// The im2col matrix (patch x P Q) of a padded group as B of a product (K = patch, N = P Q): pair
// row j holds taps 2j and 2j + 1 of every position, one output row at a time.
void im2col_as_b(const std::uint16_t* xp, const PaddedGroup& pad, const Window2d& g, Bf16B& out) {
  const std::int64_t P = g.P(), Q = g.Q(), patch = g.patch_size();
  for (std::int64_t j = 0; j < out.Kp / 2; ++j) {
    std::uint32_t* o = out.pairs() + j * out.Np;
    const std::int64_t k = 2 * j;
    if (k + 1 >= patch) {  // the last tap of an odd patch, or padding: zeros beside it
      for (std::int64_t m = 0; m < P * Q; ++m) o[m] = k < patch ? xp[pad.tap(g, k) + pad.position(g, m)] : 0u;
    } else {
      const std::uint16_t* a = xp + pad.tap(g, k);
      const std::uint16_t* b = xp + pad.tap(g, k + 1);
      for (std::int64_t p = 0; p < P; ++p) {
        const std::uint16_t* ra = a + p * g.stride_h * pad.Wp;
        const std::uint16_t* rb = b + p * g.stride_h * pad.Wp;
        std::uint32_t* op = o + p * Q;
        if (g.stride_w == 1)
          interleave(ra, rb, op, Q);
        else
          for (std::int64_t q = 0; q < Q; ++q) op[q] = Bf16B::pair(ra[q * g.stride_w], rb[q * g.stride_w]);
      }
    }
    std::fill(o + P * Q, o + out.Np, 0u);
  }
}

// The transposed im2col matrix (P Q x patch) of a padded group as B (K = P Q, N = patch): pair row
// j holds positions 2j and 2j + 1 of every tap. `taps` holds patch offsets.
void im2col_transposed_as_b(const std::uint16_t* xp, const PaddedGroup& pad, const Window2d& g, Bf16B& out,
                            std::int32_t* taps) {
  const std::int64_t PQ = g.P() * g.Q(), patch = g.patch_size();
  for (std::int64_t n = 0; n < patch; ++n) taps[n] = static_cast<std::int32_t>(pad.tap(g, n));
  for (std::int64_t j = 0; j < out.Kp / 2; ++j) {
    std::uint32_t* o = out.pairs() + j * out.Np;
    const std::int64_t m = 2 * j;
    if (m + 1 < PQ) {
      const std::uint16_t* a = xp + pad.position(g, m);
      const std::uint16_t* b = xp + pad.position(g, m + 1);
      if (b == a + 1)  // neighbours in one input row: the pair is one 32-bit word of it
        gather_words(a, taps, o, patch);
      else
        for (std::int64_t n = 0; n < patch; ++n) o[n] = Bf16B::pair(a[taps[n]], b[taps[n]]);
    } else if (m < PQ) {
      const std::uint16_t* a = xp + pad.position(g, m);
      for (std::int64_t n = 0; n < patch; ++n) o[n] = a[taps[n]];
    } else {
      std::fill(o, o + patch, 0u);
    }
    std::fill(o + patch, o + out.Np, 0u);
  }
}

// Per-task workspace bytes of each bfloat16 body.
std::size_t padded_bytes(const Window2d& g) { return Carve::bytes<std::uint16_t>(PaddedGroup{g}.values(g)); }
std::size_t forward_task_bytes(const Window2d& g) {
  return Carve::aligned(Bf16B::values(g.patch_size(), g.P() * g.Q()) * 2) + padded_bytes(g);
}
std::size_t backward_data_task_bytes(const Window2d& g, DType dx_type) {
  if (input_gradient_is_a_convolution(g)) return forward_task_bytes(input_gradient_window(g));
  const std::int64_t PQ = g.P() * g.Q();
  return Carve::aligned(Bf16B::values(g.filters_per_group(), PQ) * 2) +
         Carve::aligned(static_cast<std::size_t>(g.patch_size() * PQ) * 4) +
         (dx_type == DType::f32 ? 0 : Carve::aligned(static_cast<std::size_t>(g.channels_per_group() * g.H * g.W) * 4));
}
std::size_t backward_filter_task_bytes(const Window2d& g) {
  const std::int64_t PQ = g.P() * g.Q();
  return Carve::aligned(Bf16A::values(g.filters_per_group(), PQ) * 2) +
         Carve::aligned(Bf16B::values(PQ, g.patch_size()) * 2) + padded_bytes(g) +
         Carve::aligned(static_cast<std::size_t>(g.patch_size()) * 4);
}

// The weight of each group packed as A: W_g (Kg x patch), or W_g^T (patch x Kg) when `transposed`.
struct WeightPacks {
  std::vector<std::optional<Bf16A>> fresh;
  std::vector<const Bf16A*> group;
  WeightPacks(const float* w, const ParameterOperand* param, const Window2d& g, bool transposed)
      : fresh(static_cast<std::size_t>(g.groups)) {
    const std::int64_t Kg = g.filters_per_group(), patch = g.patch_size();
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      const float* wg = w + grp * Kg * patch;
      group.push_back(transposed ? &pack_bf16_a(param, true, patch, Kg, wg, DType::f32, patch, fresh[grp])
                                 : &pack_bf16_a(param, false, Kg, patch, wg, DType::f32, patch, fresh[grp]));
    }
  }
};

// y (N, K, P, Q), float32 or bfloat16 = beta y + conv(x, the packed weight) + bias, in float32
// before y's one rounding.
void forward_into(const void* x, DType x_type, const WeightPacks& packs, const float* bias, void* y, DType y_type,
                  float beta, const Window2d& g, std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group();
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * forward_task_bytes(g)};
    Bf16B col{g.patch_size(), PQ, carve.take<std::uint16_t>(Bf16B::values(g.patch_size(), PQ))};
    const PaddedGroup pad{g};
    std::uint16_t* xp = carve.take<std::uint16_t>(pad.values(g));
    pad.clear(g, xp);
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, x_type, g, n, grp, xp);
        im2col_as_b(xp, pad, g, col);
        bf16_gemm(*packs.group[grp], col,
                  {.C = static_cast<std::byte*>(y) + (n * g.K + grp * Kg) * PQ * static_cast<std::int64_t>(dtype_size(y_type)),
                   .type = y_type, .ldc = PQ, .beta = beta, .row_bias = bias != nullptr ? bias + grp * Kg : nullptr});
      }
  });
}

// ---- bfloat16 on AVX-512 BF16: the implicit GEMM over channel pairs ------------------------------
// vdpbf16ps multiplies pairs of bfloat16 values along the reduction. A pair here is two neighbouring
// channels at one tap: the padded image is interleaved two channels at a time (an odd count gets a
// zero channel), so that tap (channel pair, r, s) of a position is one 32-bit word of it, broadcast
// against the pairs of 16 filters of the weight, packed likewise once per call. On processors with
// AMX the tiles' GEMM above stays.

#if defined(__x86_64__)
#define ACCRUE_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// gathered_tile with A(i, l) and B(l) pairs of bfloat16 values: A's the 32-bit word at
// x + row_off[i] + col_off[l], offsets counted in bfloat16 values (a pair may start at any of them).
template <int MR, int NV>
ACCRUE_TARGET_AVX512_BF16 void pair_tile(const std::uint16_t* x, const std::int32_t* row_off,
                                         const std::int32_t* col_off, std::int64_t L, const std::uint32_t* b,
                                         std::int64_t ldb, float* c, std::int64_t ldc, bool accumulate) {
  const std::uint16_t* a[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) a[r] = x + row_off[r];
  __m512 acc[MR][NV];
  load_tile<MR, NV>(acc, c, ldc, accumulate);
  for (std::int64_t l = 0; l < L; ++l) {
    __m512bh bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + l * ldb + 16 * v));
    const std::int64_t o = col_off[l];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      std::int32_t word;
      std::memcpy(&word, a[r] + o, sizeof word);
      const __m512bh ar = reinterpret_cast<__m512bh>(_mm512_set1_epi32(word));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, bv[v]);
    }
  }
  store_tile<MR, NV>(acc, c, ldc);
}

template <int MR, int NV>
struct PairTile {
  static constexpr auto run = &pair_tile<MR, NV>;
};
constexpr GatheredTiles<std::uint16_t, std::uint32_t> pair_tiles =
    tiles_of<std::uint16_t, std::uint32_t, PairTile>(std::make_integer_sequence<int, 8>{});
#else
constexpr GatheredTiles<std::uint16_t, std::uint32_t> pair_tiles = {};
#endif

bool pair_tiles_available() {
  static const bool yes = [] {
    const std::vector<Bf16Kernel> kernels = bf16_kernels_available();
    return std::find(kernels.begin(), kernels.end(), Bf16Kernel::avx512_bf16) != kernels.end();
  }();
  return yes;
}

// Whether the pair GEMM runs a bfloat16 pass with `channels` output channels per group (on its
// own only where AMX's tiles are not there to run the other form).
bool pairs_run(const Window2d& g, std::int64_t channels) {
  return runs_implicit(g, channels, pair_tiles_available(), bf16_kernel() == Bf16Kernel::avx512_bf16);
}
bool forward_runs_pairs(const Window2d& g) { return pairs_run(g, g.filters_per_group()); }
bool input_gradient_runs_pairs(const Window2d& g) {
  return input_gradient_is_a_convolution(g) && pairs_run(g, g.channels_per_group());
}

// Channel pairs of a group, and pair taps (channel pair, r, s) of its patch.
std::int64_t channel_pairs(const Window2d& g) { return (g.channels_per_group() + 1) / 2; }
std::int64_t pair_taps(const Window2d& g) { return channel_pairs(g) * g.R * g.S; }

// The weight of each group as pairs of bfloat16 values, (pair taps x Kg) in rows of lanes16(Kg).
std::size_t packed_pairs_bytes(const Window2d& g) {
  return Carve::bytes<std::uint32_t>(g.groups * pair_taps(g) * lanes16(g.filters_per_group()));
}
void pack_weight_pairs(const float* w, const Window2d& g, std::uint32_t* out) {
  const std::int64_t Kg = g.filters_per_group(), Kp = lanes16(Kg), Cg = g.channels_per_group(), RS = g.R * g.S,
                     L = pair_taps(g);
  std::fill(out, out + g.groups * L * Kp, 0u);
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t k = 0; k < Kg; ++k)
      for (std::int64_t c = 0; c < Cg; ++c)
        for (std::int64_t rs = 0; rs < RS; ++rs) {
          const std::uint32_t v = common::bf16_bits_from_float(w[((grp * Kg + k) * Cg + c) * RS + rs]);
          out[(grp * L + c / 2 * RS + rs) * Kp + k] |= v << (16 * (c % 2));  // Bf16B::pair's order
        }
}

std::size_t pair_forward_task_bytes(const Window2d& g) {
  const PaddedGroup pad{g};
  const std::int64_t plane = pad.Hp * pad.Wp, pairs = channel_pairs(g);
  return Carve::bytes<std::uint16_t>(2 * pairs * plane) + Carve::bytes<std::uint32_t>(pairs * plane) +
         Carve::bytes<float>(g.P() * g.Q() * lanes16(g.filters_per_group())) + offsets_bytes(g, pair_taps(g));
}

// y (+)= conv(x, the packed pairs) + bias, y float32 or bfloat16 (rounded once): as
// implicit_forward, over the channel-pair image.
template <class Y>
void pair_forward(const void* x, DType x_type, const std::uint32_t* packed, const float* bias, Y* y, bool accumulate,
                  const Window2d& g, std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group(), Kp = lanes16(Kg), L = pair_taps(g),
                     pairs = channel_pairs(g);
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * pair_forward_task_bytes(g)};
    const PaddedGroup pad{g};
    const std::int64_t plane = pad.Hp * pad.Wp;
    std::uint16_t* xp = carve.take<std::uint16_t>(2 * pairs * plane);
    std::uint32_t* xq = carve.take<std::uint32_t>(pairs * plane);
    float* yt = carve.take<float>(PQ * Kp);
    std::int32_t* positions = carve.take<std::int32_t>(PQ);
    std::int32_t* taps = carve.take<std::int32_t>(L);
    fill_offsets(pad, g, positions, taps, L);
    for (std::int64_t m = 0; m < PQ; ++m) positions[m] *= 2;  // in bfloat16 values of the pair image
    for (std::int64_t l = 0; l < L; ++l) taps[l] *= 2;
    // The padding and an odd count's zero channel, which fill() never writes.
    std::fill(xp, xp + 2 * pairs * plane, std::uint16_t{0});
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, x_type, g, n, grp, xp);
        for (std::int64_t p = 0; p < pairs; ++p) interleave(xp + 2 * p * plane, xp + (2 * p + 1) * plane, xq + p * plane, plane);
        gathered_gemm(pair_tiles, reinterpret_cast<const std::uint16_t*>(xq), positions, PQ, taps, L,
                      packed + grp * L * Kp, Kp, yt, false);
        transpose(yt, Kp, PQ, Kg, y + (n * g.K + grp * Kg) * PQ, PQ, bias != nullptr ? bias + grp * Kg : nullptr,
                  accumulate);
      }
  });
}

// The weight's gradient sums over positions, so its pairs are two neighbouring positions of one
// output row (stride 1 along rows, rows of even length): the word at tap + position(2 l) of the
// plain bfloat16 image, against dy's pair (2 l, 2 l + 1) of 16 filters, which is dy read as 32-bit
// words and transposed.
bool filter_runs_pairs(const Window2d& g) {
  return pairs_run(g, g.filters_per_group()) && g.stride_w == 1 && g.Q() % 2 == 0;
}

std::size_t pair_filter_task_bytes(const Window2d& g) {
  const std::int64_t Kp = lanes16(g.filters_per_group()), pairs = g.P() * g.Q() / 2;
  return Carve::bytes<std::uint16_t>(PaddedGroup{g}.values(g)) + Carve::bytes<std::uint32_t>(pairs * Kp) +
         Carve::bytes<std::int32_t>(pairs) + Carve::bytes<std::int32_t>(g.patch_size()) +
         Carve::bytes<float>(g.groups * g.patch_size() * Kp);
}

void pair_backward_filter(const std::uint16_t* dy, const void* x, DType x_type, float* dw, const Window2d& g,
                          bool accumulate, std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), pairs = PQ / 2, Kg = g.filters_per_group(), Kp = lanes16(Kg),
                     patch = g.patch_size();
  const int tasks = tasks_for(g.N);
  std::vector<float*> sums(static_cast<std::size_t>(tasks));
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * pair_filter_task_bytes(g)};
    const PaddedGroup pad{g};
    std::uint16_t* xp = carve.take<std::uint16_t>(pad.values(g));
    pad.clear(g, xp);
    std::uint32_t* dyq = carve.take<std::uint32_t>(pairs * Kp);
    std::int32_t* positions = carve.take<std::int32_t>(pairs);
    std::int32_t* taps = carve.take<std::int32_t>(patch);
    float* sum = sums[static_cast<std::size_t>(t)] = carve.take<float>(g.groups * patch * Kp);
    for (std::int64_t l = 0; l < pairs; ++l) positions[l] = static_cast<std::int32_t>(pad.position(g, 2 * l));
    for (std::int64_t k = 0; k < patch; ++k) taps[k] = static_cast<std::int32_t>(pad.tap(g, k));
    std::fill(dyq, dyq + pairs * Kp, 0u);  // the columns beyond Kg stay zero
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, x_type, g, n, grp, xp);
        // The words move through the float32 transpose untouched (no arithmetic on them).
        transpose(reinterpret_cast<const float*>(dy + (n * g.K + grp * Kg) * PQ), pairs, Kg, pairs,
                  reinterpret_cast<float*>(dyq), Kp, nullptr, false);
        gathered_gemm(pair_tiles, xp, taps, patch, positions, pairs, dyq, Kp, sum + grp * patch * Kp,
                      n != sample_begin(g.N, tasks, t));
      }
  });
  add_transposed_sums(sums, dw, g, accumulate);
}

}  // namespace

void conv2d_forward_bf16(const void* x, DType x_type, const float* w, const ParameterOperand* w_param,
                         const float* bias, std::uint16_t* y, const Window2d& g, std::byte* workspace) {
  if (!forward_runs_pairs(g))
    return forward_into(x, x_type, WeightPacks{w, w_param, g, false}, bias, y, DType::bf16, 0.0f, g, workspace);
  auto* packed = reinterpret_cast<std::uint32_t*>(workspace);
  pack_weight_pairs(w, g, packed);
  pair_forward(x, x_type, packed, bias, y, false, g, workspace + packed_pairs_bytes(g));
}

namespace {

template <class T>
void backward_data_bf16(const std::uint16_t* dy, const float* w, const ParameterOperand* w_param, T* dx,
                        const Window2d& g, bool accumulate, std::byte* workspace) {
  constexpr DType dx_type = std::is_same_v<T, float> ? DType::f32 : DType::bf16;
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size(), sample = Cg * g.H * g.W;
  const WeightPacks packs{w, w_param, g, true};
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * backward_data_task_bytes(g, dx_type)};
    Bf16B dyp{Kg, PQ, carve.take<std::uint16_t>(Bf16B::values(Kg, PQ))};
    float* col = carve.take<float>(patch * PQ);
    float* sum = dx_type == DType::f32 ? nullptr : carve.take<float>(sample);
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pack_bf16(dyp, false, dy + (n * g.K + grp * Kg) * PQ, DType::bf16, PQ);
        bf16_gemm(*packs.group[grp], dyp, {.C = col, .type = DType::f32, .ldc = PQ});  // W_g^T dy
        T* dxg = dx + (n * g.C + grp * Cg) * g.H * g.W;
        if constexpr (std::is_same_v<T, float>) {
          if (!accumulate) std::fill(dxg, dxg + sample, 0.0f);
          col2im_add(col, g, dxg);
        } else {  // summed in float32, rounded once
          std::fill(sum, sum + sample, 0.0f);
          col2im_add(col, g, sum);
          for (std::int64_t i = 0; i < sample; ++i)
            dxg[i] = as<std::uint16_t>(accumulate ? sum[i] + as<float>(dxg[i]) : sum[i]);
        }
      }
  });
}

}  // namespace

void conv2d_backward_filter_bf16(const std::uint16_t* dy, const void* x, DType x_type, float* dw, const Window2d& g,
                                 bool accumulate, std::byte* workspace) {
  if (filter_runs_pairs(g)) return pair_backward_filter(dy, x, x_type, dw, g, accumulate, workspace);
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group(), patch = g.patch_size(), wsize = g.K * patch;
  if (g.N == 0) {
    if (!accumulate) std::fill(dw, dw + wsize, 0.0f);
    return;
  }
  const int tasks = tasks_for(g.N);
  auto* partials = reinterpret_cast<float*>(workspace + tasks * backward_filter_task_bytes(g));
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * backward_filter_task_bytes(g)};
    Bf16A dya{Kg, PQ, carve.take<std::uint16_t>(Bf16A::values(Kg, PQ))};
    Bf16B colt{PQ, patch, carve.take<std::uint16_t>(Bf16B::values(PQ, patch))};
    const PaddedGroup pad{g};
    std::uint16_t* xp = carve.take<std::uint16_t>(pad.values(g));
    pad.clear(g, xp);
    std::int32_t* taps = carve.take<std::int32_t>(patch);
    float* out = t == 0 ? dw : partials + (t - 1) * wsize;
    bool first = t != 0 || !accumulate;
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pack_bf16(dya, false, dy + (n * g.K + grp * Kg) * PQ, DType::bf16, PQ);
        pad.fill(x, x_type, g, n, grp, xp);
        im2col_transposed_as_b(xp, pad, g, colt, taps);
        // dW_g (Kg, patch) += dy_g (Kg, PQ) col^T (PQ, patch), in float32
        bf16_gemm(dya, colt, {.C = out + grp * Kg * patch, .type = DType::f32, .ldc = patch, .beta = first ? 0.0f : 1.0f});
      }
      first = false;
    }
  });
  add_partials(partials, dw, g);
}

ConvWorkspaceBytes conv2d_bf16_workspace_bytes(const Window2d& g, DType x_type) {
  const auto all = [&](std::size_t per_task) { return static_cast<std::size_t>(tasks_for(g.N)) * per_task; };
  // The weight's packs as A, one per group.
  const auto packs = [&](std::int64_t rows, std::int64_t cols) {
    return static_cast<std::size_t>(g.groups * Bf16A::values(rows, cols)) * 2;
  };
  const std::int64_t Cg = g.channels_per_group(), Kg = g.filters_per_group(), taps = g.R * g.S;
  const bool as_convolution = input_gradient_is_a_convolution(g);
  const Window2d t = input_gradient_window(g);
  ConvWorkspaceBytes bytes{
      .forward = all(forward_task_bytes(g)),
      .backward_data = all(backward_data_task_bytes(g, x_type)) + (as_convolution ? flipped_weight_bytes(g) : 0),
      .backward_filter = all(backward_filter_task_bytes(g)) + partials_bytes(g),
      .forward_packs = packs(Kg, Cg * taps),
      .backward_data_packs = as_convolution ? packs(Cg, Kg * taps) : packs(Cg * taps, Kg),
      // The flipped weight's pack is made on every call.
      .kept_forward = packs(Kg, Cg * taps),
      .kept_backward_data = as_convolution ? 0 : packs(Cg * taps, Kg)};
  // The pair GEMM packs its weight into the workspace on every call, and keeps nothing.
  if (forward_runs_pairs(g)) {
    bytes.forward = packed_pairs_bytes(g) + all(pair_forward_task_bytes(g));
    bytes.forward_packs = bytes.kept_forward = 0;
  }
  if (input_gradient_runs_pairs(g)) {
    bytes.backward_data = flipped_weight_bytes(g) + packed_pairs_bytes(t) + all(pair_forward_task_bytes(t));
    bytes.backward_data_packs = bytes.kept_backward_data = 0;
  }
  if (filter_runs_pairs(g)) bytes.backward_filter = all(pair_filter_task_bytes(g));
  return bytes;
}

void conv2d_backward_data_bf16(const std::uint16_t* dy, const float* w, const ParameterOperand* w_param, void* dx,
                               DType dx_type, const Window2d& g, bool accumulate, std::byte* workspace) {
  if (input_gradient_runs_pairs(g)) {
    auto* flipped = reinterpret_cast<float*>(workspace);
    flip_weight(w, g, flipped);
    const Window2d t = input_gradient_window(g);
    auto* packed = reinterpret_cast<std::uint32_t*>(workspace + flipped_weight_bytes(g));
    pack_weight_pairs(flipped, t, packed);
    std::byte* rest = workspace + flipped_weight_bytes(g) + packed_pairs_bytes(t);
    if (dx_type == DType::f32) return pair_forward(dy, DType::bf16, packed, nullptr, static_cast<float*>(dx), accumulate, t, rest);
    return pair_forward(dy, DType::bf16, packed, nullptr, static_cast<std::uint16_t*>(dx), accumulate, t, rest);
  }
  if (input_gradient_is_a_convolution(g)) {
    // The flipped weight is rearranged, so its pack is made here rather than kept.
    auto* flipped = reinterpret_cast<float*>(workspace);
    flip_weight(w, g, flipped);
    const Window2d t = input_gradient_window(g);
    return forward_into(dy, DType::bf16, WeightPacks{flipped, nullptr, t, false}, nullptr, dx, dx_type,
                        accumulate ? 1.0f : 0.0f, t, workspace + flipped_weight_bytes(g));
  }
  if (dx_type == DType::f32) backward_data_bf16(dy, w, w_param, static_cast<float*>(dx), g, accumulate, workspace);
  else backward_data_bf16(dy, w, w_param, static_cast<std::uint16_t*>(dx), g, accumulate, workspace);
}

void conv2d_backward_bias_bf16(const std::uint16_t* dy, float* db, const Window2d& g, bool accumulate) {
  backward_bias(dy, db, g, accumulate);
}

}  // namespace accrue::kernels::cpu

