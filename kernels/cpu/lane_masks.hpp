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

}  // namespace accrue::kernels::cpu

#endif
