#pragma once
// The implicit GEMM's register tiles (AVX-512, and AVX2 with FMA): products that read im2col's
// entries where they lie in the zero-padded image, the transposes beside them, the packed weight
// and the offsets of positions and taps. Used by the float32 implicit GEMM, Winograd and the
// bfloat16 pair kernels.

#include "../capability.hpp"
#include "parts.hpp"

namespace accrue::kernels::cpu::conv_detail {

// ---- float32 on AVX-512 or AVX2: an implicit GEMM over the padded image -------------------------
// im2col writes patch-size values for every output position of every sample, which OpenBLAS then
// packs again (and it packs the weight again for every sample). Here entry (position m, tap k) of
// the im2col matrix is read where it lies, xp[position(m) + tap(k)] of the zero-padded image, and
// broadcast against vectors of 16 filters: of the weight, packed once per call, in forward; of the
// output gradient, transposed once per sample, for the weight's gradient. Products accumulate
// along taps (forward) or positions (weight gradient) in registers, with no horizontal sums.

// Packed weight and transposed operands hold filters in rows of a multiple of 16 floats.
inline std::int64_t lanes16(std::int64_t n) { return (n + 15) / 16 * 16; }

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
ACCRUE_TARGET_AVX512 inline void gathered_tile(const float* xp, const std::int32_t* row_off, const std::int32_t* col_off,
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
ACCRUE_TARGET_AVX2 inline void gathered_tile8(const float* xp, const std::int32_t* row_off, const std::int32_t* col_off,
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
inline void gathered_gemm(const GatheredTiles<T, U>& tiles, const T* xp, const std::int32_t* row_off, std::int64_t rows,
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
inline ImplicitKernel implicit_kernel() {
  if (capability() >= Capability::avx512) return ImplicitKernel::avx512;
  if (capability() >= Capability::avx2) return ImplicitKernel::avx2;
  return ImplicitKernel::none;
}
inline bool implicit_gemm_runs() { return implicit_kernel() != ImplicitKernel::none; }

inline void gathered_gemm(const float* xp, const std::int32_t* row_off, std::int64_t rows, const std::int32_t* col_off,
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
ACCRUE_TARGET_AVX512 inline void transpose(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t cols, T* dst,
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

ACCRUE_TARGET_AVX2 inline void transpose_avx2(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t cols,
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
inline void transpose(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t cols, T* dst,
               std::int64_t ld_dst, const float* bias, bool accumulate) {
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      T& d = dst[j * ld_dst + i];
      d = as<T>((accumulate ? as<float>(d) : 0.0f) + src[i * ld_src + j] + (bias ? bias[j] : 0.0f));
    }
}
#endif

// transpose in float32 with the implicit GEMM's instruction set.
inline void transpose_floats(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t cols, float* dst,
                      std::int64_t ld_dst, const float* bias, bool accumulate) {
#if defined(__x86_64__)
  if (implicit_kernel() == ImplicitKernel::avx2)
    return transpose_avx2(src, ld_src, rows, cols, dst, ld_dst, bias, accumulate);
#endif
  transpose(src, ld_src, rows, cols, dst, ld_dst, bias, accumulate);
}

// The weight of each group transposed, (patch x Kg) in rows of lanes16(Kg) floats, zeros beside.
inline std::size_t packed_weight_bytes(const Window2d& g) {
  return Carve::bytes<float>(g.groups * g.patch_size() * lanes16(g.filters_per_group()));
}
inline void pack_weight(const float* w, const Window2d& g, float* out) {
  const std::int64_t Kg = g.filters_per_group(), Kp = lanes16(Kg), patch = g.patch_size();
  std::fill(out, out + g.groups * patch * Kp, 0.0f);
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    transpose_floats(w + grp * Kg * patch, patch, Kg, patch, out + grp * patch * Kp, Kp, nullptr, false);
}

// Offsets into a padded group of every output position and of `tap_count` taps (the patch's, or
// of its channel pairs).
inline void fill_offsets(const PaddedGroup& pad, const Window2d& g, std::int32_t* positions, std::int32_t* taps,
                  std::int64_t tap_count) {
  for (std::int64_t m = 0; m < g.P() * g.Q(); ++m) positions[m] = static_cast<std::int32_t>(pad.position(g, m));
  for (std::int64_t k = 0; k < tap_count; ++k) taps[k] = static_cast<std::int32_t>(pad.tap(g, k));
}

inline std::size_t offsets_bytes(const Window2d& g, std::int64_t tap_count) {
  return Carve::bytes<std::int32_t>(g.P() * g.Q()) + Carve::bytes<std::int32_t>(tap_count);
}

// Samples one product reads. Where a sample has few output positions (a ResNet's last stage at
// 2x2, from 64x64 images) a product per sample streams the whole weight, or the weight gradient's
// sums, for a handful of rows: ResNet-18's layer4 took 63% of its backward pass at 25% of its
// arithmetic. A block of samples whose padded images lie one after the other is read as one product
// of their positions together, which streams it once per block.
inline std::int64_t samples_per_product(const Window2d& g) {
  const std::int64_t positions = g.P() * g.Q(), values = PaddedGroup{g}.values(g);
  if (g.groups != 1 || positions >= 64) return 1;
  return std::max<std::int64_t>(1, std::min({64 / positions, g.N, (std::int64_t{INT32_MAX} - values) / std::max<std::int64_t>(values, 1)}));
}

// What every implicit GEMM task carves from its workspace: the padded images of a block of samples
// (cleared, so that their padding stays zero), a positions x filters matrix (the output, or dy
// transposed) and the offsets of positions (every sample's of the block) and taps.
struct ImplicitTask {
  float* xp;
  float* transposed;
  std::int32_t* positions;
  std::int32_t* taps;
  // Samples of a block (samples_per_product), each one's padded image `values` after the last's.
  std::int64_t samples;
  std::int64_t values;

  static std::size_t bytes(const Window2d& g) {
    const std::int64_t s = samples_per_product(g), PQ = g.P() * g.Q();
    return Carve::bytes<float>(s * PaddedGroup{g}.values(g)) + Carve::bytes<float>(s * PQ * lanes16(g.filters_per_group())) +
           offsets_bytes(g, g.patch_size()) + Carve::bytes<std::int32_t>((s - 1) * PQ);
  }
  ImplicitTask(Carve& carve, const PaddedGroup& pad, const Window2d& g)
      : xp(carve.take<float>(samples_per_product(g) * pad.values(g))),
        transposed(carve.take<float>(samples_per_product(g) * g.P() * g.Q() * lanes16(g.filters_per_group()))),
        positions(carve.take<std::int32_t>(samples_per_product(g) * g.P() * g.Q())),
        taps(carve.take<std::int32_t>(g.patch_size())),
        samples(samples_per_product(g)),
        values(pad.values(g)) {
    std::fill(xp, xp + samples * values, 0.0f);
    fill_offsets(pad, g, positions, taps, g.patch_size());
    const std::int64_t PQ = g.P() * g.Q();
    for (std::int64_t s = 1; s < samples; ++s)
      for (std::int64_t m = 0; m < PQ; ++m) positions[s * PQ + m] = static_cast<std::int32_t>(positions[m] + s * values);
  }
};

}  // namespace accrue::kernels::cpu::conv_detail
