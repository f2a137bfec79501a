#pragma once
// Masks of a vector's first n lanes, for the masked loads and stores at a row's ragged end: one
// definition for every kernel that vectorises by hand (skinny GEMM, convolution, pooling).

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>

namespace accrue::kernels::cpu {

/// The first n of 16 lanes (n clamped to 0..16) as an AVX-512 mask.
inline __mmask16 first_lanes16(std::int64_t n) {
  return n >= 16 ? __mmask16{0xFFFF} : n <= 0 ? __mmask16{0} : static_cast<__mmask16>((1u << n) - 1u);
}

/// The first n of 8 lanes (n clamped to 0..8) as an AVX2 maskload/maskstore mask.
__attribute__((target("avx2"))) inline __m256i first_lanes8(std::int64_t n) {
  const int count = static_cast<int>(n < 0 ? 0 : n > 8 ? 8 : n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// Stores the first n (clamped to 0..8) lanes of v at p. Only the ragged part goes lane by lane:
/// vmaskmovps stores are microcoded on AMD's Zen 2 and 3, many times slower than a plain store.
__attribute__((target("avx2"))) inline void store_first8(float* p, std::int64_t n, __m256 v) {
  if (n >= 8) return _mm256_storeu_ps(p, v);
  __m128 part = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(p, part);
    p += 4;
    n -= 4;
    part = _mm256_extractf128_ps(v, 1);
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
    p += 2;
    n -= 2;
    part = _mm_movehl_ps(part, part);
  }
  if (n >= 1) _mm_store_ss(p, part);
}

}  // namespace accrue::kernels::cpu

#endif
