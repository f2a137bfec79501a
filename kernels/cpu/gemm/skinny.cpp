// GEMMs with one small dimension, the shapes of a training step on small batches, without
// packing: B (batch) rows of activations against weight matrices.
//
//   NN  C(M,N) = A(M,K) B(K,N)      dx = dy W       M = batch   (axpy form: rows of B are vectors)
//   TN  C(M,N) = A(K,M)^T B(K,N)    dW = dy^T x     K = batch   (outer-product form)
//   NT  C(M,N) = A(M,K) B(N,K)^T    y = x W^T       M = batch   (dot form: vectors run along K)
//
// OpenBLAS packs both operands into panels before every multiply and, for beta = 0, first zeroes
// C in a separate pass; for a 16 x 512 x 784 multiply that overhead costs as much as the
// arithmetic (measured in bench/gemm_shapes). These kernels read the operands in place, keep a
// tile of C in vector registers for the whole K loop and write it once, with alpha and beta
// applied at the store. There is a set for AVX-512 (16 lanes, 32 registers) and one for AVX2 with
// FMA (8 lanes, 16 registers, so smaller tiles), chosen at run time by what the processor has;
// other shapes and processors use OpenBLAS.

#include "skinny.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "../../../framework/core/error.hpp"
#include "../capability.hpp"
#include "../lane_masks.hpp"
#include "../parallel.hpp"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers build shuffles from _mm512_undefined_ps(), which -Wuninitialized
// reports once inlined (a false positive, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#define ACCRUE_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))
#define ACCRUE_TARGET_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace accrue::kernels::cpu {

#if defined(__x86_64__)
namespace {

// C[0..n) = alpha * acc + beta * C[0..n), under the lane mask; beta = 0 never reads C.
ACCRUE_TARGET_AVX512 inline void store(float* c, __mmask16 mask, __m512 acc, float alpha, float beta) {
  __m512 v = _mm512_mul_ps(acc, _mm512_set1_ps(alpha));
  if (beta != 0.0f) v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, c), _mm512_set1_ps(beta), v);
  _mm512_mask_storeu_ps(c, mask, v);
}

// Below this many multiply-adds a second thread costs more in synchronisation than it saves.
constexpr std::int64_t min_parallel_macs = 1 << 18;
// The smallest chunk of work threads claim at the end of a multiply (about a microsecond): small
// enough that they finish together, large enough that claiming stays cheap.
constexpr std::int64_t min_chunk_macs = 1 << 16;

// fn(begin, end) over [0, units) units of unit_macs multiply-adds each: on this thread when the
// whole is small, else across the pool in guided chunks (parallel_guided). Equal fixed tasks left
// one thread waiting for the other's last task, about 8% of a batch-64 MLP step.
template <class F>
void split_units(std::int64_t units, std::int64_t unit_macs, F&& fn) {
  if (units * unit_macs < min_parallel_macs) return fn(std::int64_t{0}, units);
  parallel_guided(units, std::max<std::int64_t>(1, min_chunk_macs / std::max<std::int64_t>(unit_macs, 1)), fn);
}

// ---- AVX-512, NN and TN: a tile of MR rows x 48 columns of C -------------------------------------
// a(r, k) = A[r * a_row + k * a_k], so one kernel serves A (NN: a_row = lda, a_k = 1) and A^T
// (TN: a_row = 1, a_k = lda). Each k broadcasts MR values of A and loads three vectors of row k of B.
// With alpha = beta = 1 the accumulators start from C and go on adding: C + A1 B1 then + A2 B2 gives
// the bits of C + [A1 A2] [B1; B2] in one call, so a weight gradient summed micro-batch by
// micro-batch equals the one multiplied once over the window's rows (DeferredWeightGradients).
template <int MR>
ACCRUE_TARGET_AVX512 void axpy_tile(std::int64_t K, const float* A, std::int64_t a_row, std::int64_t a_k, const float* B,
                                    std::int64_t ldb, float* C, std::int64_t ldc, std::int64_t n, float alpha, float beta) {
  const __mmask16 m0 = first_lanes16(n), m1 = first_lanes16(n - 16), m2 = first_lanes16(n - 32);
  const bool continues = alpha == 1.0f && beta == 1.0f;
  __m512 acc[MR][3];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const float* c = C + r * ldc;
    acc[r][0] = continues ? _mm512_maskz_loadu_ps(m0, c) : _mm512_setzero_ps();
    acc[r][1] = continues ? _mm512_maskz_loadu_ps(m1, c + 16) : _mm512_setzero_ps();
    acc[r][2] = continues ? _mm512_maskz_loadu_ps(m2, c + 32) : _mm512_setzero_ps();
  }
  for (std::int64_t k = 0; k < K; ++k) {
    const float* b = B + k * ldb;
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, b);
    const __m512 b1 = _mm512_maskz_loadu_ps(m1, b + 16);
    const __m512 b2 = _mm512_maskz_loadu_ps(m2, b + 32);
    const float* a = A + k * a_k;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r * a_row]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(ar, b2, acc[r][2]);
    }
  }
  if (continues) alpha = 1.0f, beta = 0.0f;  // C is in the sums already
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    float* c = C + r * ldc;
    store(c, m0, acc[r][0], alpha, beta);
    if (m1) store(c + 16, m1, acc[r][1], alpha, beta);
    if (m2) store(c + 32, m2, acc[r][2], alpha, beta);
  }
}

using AxpyTile = void (*)(std::int64_t, const float*, std::int64_t, std::int64_t, const float*, std::int64_t, float*,
                          std::int64_t, std::int64_t, float, float);

// ---- AVX-512, NT: a tile of MR rows x NR columns of C as dot products along K ------------------
// Each of the MR x NR accumulators holds 16 partial sums over K; at the end they are added across
// lanes with a transposing tree, so that one vector holds the 16 results.

// Sum of each of the 16 vectors v[0..15], as lane i of the result.
ACCRUE_TARGET_AVX512 inline __m512 reduce16(const __m512* v) {
  __m512 s8[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // lanes 0-7: v[2i]'s two halves added; lanes 8-15: v[2i+1]'s
    const __m512 a = v[2 * i], b = v[2 * i + 1];
    s8[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  }
  __m512 s4[4];
#pragma GCC unroll 8
  for (int i = 0; i < 4; ++i) {  // each 128-bit quarter: 4 partial sums of one source
    const __m512 a = s8[2 * i], b = s8[2 * i + 1];
    s4[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
  }
  __m512 s2[2];
#pragma GCC unroll 8
  for (int i = 0; i < 2; ++i) {
    const __m512 a = s4[2 * i], b = s4[2 * i + 1];
    s2[i] = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  }
  const __m512d lo = _mm512_unpacklo_pd(_mm512_castps_pd(s2[0]), _mm512_castps_pd(s2[1]));
  const __m512d hi = _mm512_unpackhi_pd(_mm512_castps_pd(s2[0]), _mm512_castps_pd(s2[1]));
  return _mm512_add_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi));
}

// Lane i of reduce16's result is the sum of v[source_of_lane[i]].
constexpr int reduce16_source(int lane) {
  // Worked out from the shuffles above: quarter q of the result comes from s4[0..3] quarter q,
  // which holds sources in the order the levels interleave them.
  const int q = lane / 4, l = lane % 4;
  // level 1: s8[i] quarter 0,1 <- v[2i], quarter 2,3 <- v[2i+1]
  // level 2: s4[i] quarter 0 <- s8[2i] q0 (v[4i]), q1 <- s8[2i] q2 (v[4i+1]), q2 <- s8[2i+1] q0 (v[4i+2]), q3 <- v[4i+3]
  // level 3: s2[i] lane l of quarter q: l even from s4[2i], odd from s4[2i+1]
  // level 4: lanes 0,1 of each quarter from s2[0], lanes 2,3 from s2[1]
  const int s2_index = l / 2;                   // which s2
  const int s4_index = 2 * s2_index + (l % 2);  // which s4
  return 4 * s4_index + q;
}

// Keeps a loaded vector in a register. Left alone, GCC folds the loads of A or of B into the
// multiply-adds that use them, so every multiply-add reads memory: 20 loads per 16 multiply-adds
// instead of 8, which made the kernel load-bound (155 GFLOP/s where the axpy form reaches 200).
ACCRUE_TARGET_AVX512 inline void in_register(__m512& v) { asm("" : "+v"(v)); }

template <int MR, int NR>
ACCRUE_TARGET_AVX512 void dot_tile(std::int64_t K, const float* A, std::int64_t lda, const float* B, std::int64_t ldb,
                                   float* C, std::int64_t ldc, float alpha, float beta, const float* bias) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
  std::int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 a[MR], b[NR];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      a[r] = _mm512_loadu_ps(A + r * lda + k);
      in_register(a[r]);
    }
#pragma GCC unroll 4
    for (int c = 0; c < NR; ++c) {
      b[c] = _mm512_loadu_ps(B + c * ldb + k);
      in_register(b[c]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < NR; ++c) acc[r * 4 + c] = _mm512_fmadd_ps(a[r], b[c], acc[r * 4 + c]);
  }
  if (k < K) {
    const __mmask16 m = first_lanes16(K - k);
    __m512 a[MR], b[NR];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) a[r] = _mm512_maskz_loadu_ps(m, A + r * lda + k);
#pragma GCC unroll 4
    for (int c = 0; c < NR; ++c) b[c] = _mm512_maskz_loadu_ps(m, B + c * ldb + k);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < NR; ++c) acc[r * 4 + c] = _mm512_fmadd_ps(a[r], b[c], acc[r * 4 + c]);
  }
  alignas(64) float sums[16];
  _mm512_store_ps(sums, reduce16(acc));
  float by_source[16];
  for (int lane = 0; lane < 16; ++lane) by_source[reduce16_source(lane)] = sums[lane];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) {
      float* out = C + r * ldc + c;
      const float v = alpha * by_source[r * 4 + c];
      const float scaled = beta == 0.0f ? v : v + beta * *out;
      *out = bias != nullptr ? scaled + bias[c] : scaled;
    }
}

using DotTile = void (*)(std::int64_t, const float*, std::int64_t, const float*, std::int64_t, float*, std::int64_t, float,
                         float, const float*);

template <int MR, int... NRs>
constexpr std::array<DotTile, 5> dot_row(std::integer_sequence<int, NRs...>) {
  return {nullptr, dot_tile<MR, NRs + 1>...};
}
// ---- the same two forms with AVX2 and FMA ------------------------------------------------------
// Sixteen 8-lane registers: an axpy tile is at most 6 rows x 16 columns (12 accumulators, 2 vectors
// of B, A's broadcast; 4 x 24, 4 x 16 and 2 x 24 ran 10-40% slower in bench/gemm_shapes), a dot
// tile 2 x 4 (8 accumulators, 2 rows of A, one of B at a time).

// Whole vectors load plainly; a tile's ragged edge through the mask (vmaskmovps is slower).
template <bool Full>
ACCRUE_TARGET_AVX2 inline __m256 load8(const float* p, __m256i mask) {
  if constexpr (Full) return _mm256_loadu_ps(p);
  else return _mm256_maskload_ps(p, mask);
}

// C[first n lanes] = alpha * acc + beta * C[those lanes]; beta = 0 never reads C. The ragged edge
// stores lane by lane (store_first8), as vmaskmovps stores are microcoded on AMD's Zen.
template <bool Full>
ACCRUE_TARGET_AVX2 inline void store8(float* c, __m256i mask, std::int64_t n, __m256 acc, float alpha, float beta) {
  __m256 v = _mm256_mul_ps(acc, _mm256_set1_ps(alpha));
  if (beta != 0.0f) v = _mm256_fmadd_ps(load8<Full>(c, mask), _mm256_set1_ps(beta), v);
  if constexpr (Full) _mm256_storeu_ps(c, v);
  else store_first8(c, n, v);
}

constexpr int axpy8_vectors = 2, axpy8_rows = 6;
constexpr std::int64_t axpy8_cols = 8 * axpy8_vectors;

// axpy_tile's arithmetic and order (C first, then row after row of K when alpha = beta = 1).
template <int MR, bool Full>
ACCRUE_TARGET_AVX2 void axpy8_tile_body(std::int64_t K, const float* A, std::int64_t a_row, std::int64_t a_k,
                                        const float* B, std::int64_t ldb, float* C, std::int64_t ldc, std::int64_t n,
                                        float alpha, float beta) {
  constexpr int NV = axpy8_vectors;
  __m256i mask[NV];
  for (int v = 0; v < NV; ++v) mask[v] = first_lanes8(n - 8 * v);
  const bool continues = alpha == 1.0f && beta == 1.0f;
  __m256 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = continues ? load8<Full>(C + r * ldc + 8 * v, mask[v]) : _mm256_setzero_ps();
  for (std::int64_t k = 0; k < K; ++k) {
    const float* b = B + k * ldb;
    __m256 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = load8<Full>(b + 8 * v, mask[v]);
    const float* a = A + k * a_k;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r * a_row);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
  if (continues) alpha = 1.0f, beta = 0.0f;  // C is in the sums already
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      if (n > 8 * v) store8<Full>(C + r * ldc + 8 * v, mask[v], n - 8 * v, acc[r][v], alpha, beta);
}

template <int MR>
ACCRUE_TARGET_AVX2 void axpy8_tile(std::int64_t K, const float* A, std::int64_t a_row, std::int64_t a_k, const float* B,
                                   std::int64_t ldb, float* C, std::int64_t ldc, std::int64_t n, float alpha, float beta) {
  if (n == axpy8_cols) axpy8_tile_body<MR, true>(K, A, a_row, a_k, B, ldb, C, ldc, n, alpha, beta);
  else axpy8_tile_body<MR, false>(K, A, a_row, a_k, B, ldb, C, ldc, n, alpha, beta);
}

ACCRUE_TARGET_AVX2 inline void in_register8(__m256& v) { asm("" : "+x"(v)); }

// The sum of v's eight lanes.
ACCRUE_TARGET_AVX2 inline float sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Eight steps of K (fewer under the mask) of every dot product of the tile.
template <int MR, int NR, bool Full>
ACCRUE_TARGET_AVX2 inline void dot8_step(const float* A, std::int64_t lda, const float* B, std::int64_t ldb,
                                         __m256i mask, __m256 (&acc)[MR][NR]) {
  __m256 a[MR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    a[r] = load8<Full>(A + r * lda, mask);
    in_register8(a[r]);
  }
#pragma GCC unroll 4
  for (int c = 0; c < NR; ++c) {
    __m256 b = load8<Full>(B + c * ldb, mask);
    in_register8(b);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) acc[r][c] = _mm256_fmadd_ps(a[r], b, acc[r][c]);
  }
}

template <int MR, int NR>
ACCRUE_TARGET_AVX2 void dot8_tile(std::int64_t K, const float* A, std::int64_t lda, const float* B, std::int64_t ldb,
                                  float* C, std::int64_t ldc, float alpha, float beta, const float* bias) {
  __m256 acc[MR][NR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NR; ++c) acc[r][c] = _mm256_setzero_ps();
  std::int64_t k = 0;
  for (; k + 8 <= K; k += 8) dot8_step<MR, NR, true>(A + k, lda, B + k, ldb, __m256i{}, acc);
  if (k < K) dot8_step<MR, NR, false>(A + k, lda, B + k, ldb, first_lanes8(K - k), acc);
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) {
      float* out = C + r * ldc + c;
      const float v = alpha * sum8(acc[r][c]);
      const float scaled = beta == 0.0f ? v : v + beta * *out;
      *out = bias != nullptr ? scaled + bias[c] : scaled;
    }
}

template <int MR, int... NRs>
constexpr std::array<DotTile, 5> dot8_row(std::integer_sequence<int, NRs...>) {
  return {nullptr, dot8_tile<MR, NRs + 1>...};
}

// ---- the drivers, over either set of tiles -----------------------------------------------------

struct Avx512Tiles {
  static constexpr int axpy_rows = 8;
  static constexpr std::int64_t axpy_cols = 48;
  static constexpr AxpyTile axpy[axpy_rows + 1] = {nullptr,      axpy_tile<1>, axpy_tile<2>, axpy_tile<3>, axpy_tile<4>,
                                                   axpy_tile<5>, axpy_tile<6>, axpy_tile<7>, axpy_tile<8>};
  static constexpr int dot_rows = 4, dot_cols = 4;
  static constexpr std::array<std::array<DotTile, 5>, dot_rows + 1> dot = {
      std::array<DotTile, 5>{}, dot_row<1>(std::make_integer_sequence<int, 4>{}),
      dot_row<2>(std::make_integer_sequence<int, 4>{}), dot_row<3>(std::make_integer_sequence<int, 4>{}),
      dot_row<4>(std::make_integer_sequence<int, 4>{})};
};

struct Avx2Tiles {
  static constexpr int axpy_rows = axpy8_rows;
  static constexpr std::int64_t axpy_cols = axpy8_cols;
  static constexpr AxpyTile axpy[axpy_rows + 1] = {nullptr,       axpy8_tile<1>, axpy8_tile<2>, axpy8_tile<3>,
                                                   axpy8_tile<4>, axpy8_tile<5>, axpy8_tile<6>};
  static constexpr int dot_rows = 2, dot_cols = 4;
  static constexpr std::array<std::array<DotTile, 5>, dot_rows + 1> dot = {
      std::array<DotTile, 5>{}, dot8_row<1>(std::make_integer_sequence<int, 4>{}),
      dot8_row<2>(std::make_integer_sequence<int, 4>{})};
};

template <class Tiles>
void axpy_gemm(std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A, std::int64_t a_row,
               std::int64_t a_k, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  // A unit is one row tile of one column panel, panel after panel: a thread's run of units keeps a
  // panel of B (K x the panel's columns) in L2 while the row tiles of C pass over it.
  constexpr std::int64_t rows = Tiles::axpy_rows, cols = Tiles::axpy_cols;
  const std::int64_t panels = (N + cols - 1) / cols, row_tiles = (M + rows - 1) / rows;
  split_units(panels * row_tiles, rows * cols * K, [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const std::int64_t j = u / row_tiles * cols, i = u % row_tiles * rows;
      const std::int64_t n = std::min(cols, N - j);
      const auto m = static_cast<std::size_t>(std::min(rows, M - i));
      Tiles::axpy[m](K, A + i * a_row, a_row, a_k, B + j, ldb, C + i * ldc + j, ldc, n, alpha, beta);
    }
  });
}

template <class Tiles>
void dot_gemm(std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A, std::int64_t lda,
              const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc, const float* column_bias) {
  // A unit is a block of rows of B (columns of C); each block stays in L1 while every row tile of A
  // passes over it, so B is read from memory once.
  constexpr std::int64_t rows = Tiles::dot_rows, cols = Tiles::dot_cols;
  const std::int64_t blocks = (N + cols - 1) / cols;
  split_units(blocks, M * cols * K, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t blk = b0; blk < b1; ++blk) {
      const std::int64_t j = blk * cols;
      const auto n = static_cast<std::size_t>(std::min(cols, N - j));
      for (std::int64_t i = 0; i < M; i += rows) {
        const auto m = static_cast<std::size_t>(std::min(rows, M - i));
        Tiles::dot[m][n](K, A + i * lda, lda, B + j * ldb, ldb, C + i * ldc + j, ldc, alpha, beta,
                         column_bias != nullptr ? column_bias + j : nullptr);
      }
    }
  });
}

}  // namespace

std::vector<SkinnyKernel> skinny_kernels_available() {
  std::vector<SkinnyKernel> k;
  if (capability() >= Capability::avx512) k.push_back(SkinnyKernel::avx512);
  if (capability() >= Capability::avx2) k.push_back(SkinnyKernel::avx2);
  return k;
}

SkinnyKernel skinny_kernel() {
  if (capability() >= Capability::avx512) return SkinnyKernel::avx512;
  if (capability() >= Capability::avx2) return SkinnyKernel::avx2;
  return SkinnyKernel::none;
}

namespace {
// The largest batch dimension each form takes. AVX2's axpy tiles (6 x 16) lose to OpenBLAS at a
// batch of 64 (bench/gemm_shapes: 0.85-0.95x on the MLP's dW and dx), its dot tiles do not; with
// axpy up to 32 the MLP's epoch at batch 64 took OpenBLAS's time, up to 256 1.05x-1.08x
// (bench/mlp_epoch, alternated).
std::int64_t axpy_limit() { return skinny_kernel() == SkinnyKernel::avx2 ? 32 : skinny_limit; }
}  // namespace

bool skinny_gemm_applies(bool trans_a, bool trans_b, std::int64_t M, std::int64_t /*N*/, std::int64_t K) {
  if (skinny_kernel() == SkinnyKernel::none) return false;
  if (trans_a && trans_b) return false;
  // The small dimension: M for NN and NT (the batch), K for TN (the batch).
  if (trans_a) return K <= axpy_limit();
  return M <= (trans_b ? skinny_limit : axpy_limit());
}

std::int64_t skinny_in_order_depth() { return skinny_kernel() != SkinnyKernel::none ? axpy_limit() : 0; }

namespace {
template <class Tiles>
void skinny_gemm_with(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                      const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                      std::int64_t ldc) {
  if (!trans_a && !trans_b) return axpy_gemm<Tiles>(M, N, K, alpha, A, lda, 1, B, ldb, beta, C, ldc);
  if (trans_a && !trans_b) return axpy_gemm<Tiles>(M, N, K, alpha, A, 1, lda, B, ldb, beta, C, ldc);
  return dot_gemm<Tiles>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
}
}  // namespace

void skinny_gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                 std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                 SkinnyKernel kernel) {
  ACCRUE_ASSERT(kernel != SkinnyKernel::none);
  if (kernel == SkinnyKernel::avx512)
    return skinny_gemm_with<Avx512Tiles>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  skinny_gemm_with<Avx2Tiles>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void skinny_linear(std::int64_t M, std::int64_t N, std::int64_t K, const float* x, const float* w, const float* bias,
                   float* y, SkinnyKernel kernel) {
  ACCRUE_ASSERT(kernel != SkinnyKernel::none);
  if (kernel == SkinnyKernel::avx512) return dot_gemm<Avx512Tiles>(M, N, K, 1.0f, x, K, w, K, 0.0f, y, N, bias);
  dot_gemm<Avx2Tiles>(M, N, K, 1.0f, x, K, w, K, 0.0f, y, N, bias);
}

#else

std::vector<SkinnyKernel> skinny_kernels_available() { return {}; }
SkinnyKernel skinny_kernel() { return SkinnyKernel::none; }
bool skinny_gemm_applies(bool, bool, std::int64_t, std::int64_t, std::int64_t) { return false; }
std::int64_t skinny_in_order_depth() { return 0; }
void skinny_gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, float, const float*, std::int64_t, const float*,
                 std::int64_t, float, float*, std::int64_t, SkinnyKernel) {
  ACCRUE_ASSERT(false);
}
void skinny_linear(std::int64_t, std::int64_t, std::int64_t, const float*, const float*, const float*, float*,
                   SkinnyKernel) {
  ACCRUE_ASSERT(false);
}

#endif

const char* skinny_kernel_name(SkinnyKernel kernel) {
  switch (kernel) {
    case SkinnyKernel::avx512: return "AVX-512";
    case SkinnyKernel::avx2: return "AVX2";
    case SkinnyKernel::none: break;
  }
  return "none";
}

}  // namespace accrue::kernels::cpu
