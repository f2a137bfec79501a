#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator. Element i of a draw at offset o uses block (o + i / 4), lane i % 4,
// so the CPU and a GPU produce the same numbers for the same (seed, offset) in any order.

#include <cmath>
#include <cstdint>

#include "macros.hpp"

namespace accrue::kernels::common {

struct Philox4 {
  std::uint32_t v[4];
};

ACCRUE_HD std::uint32_t mulhilo32(std::uint32_t a, std::uint32_t b, std::uint32_t* hi) {
  const std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  *hi = static_cast<std::uint32_t>(product >> 32);
  return static_cast<std::uint32_t>(product);
}

/// The 128 random bits of block `counter` for `seed`; `high` fills the counter's upper 64 bits
/// (a second coordinate, such as a sample index).
ACCRUE_HD Philox4 philox4x32_10(std::uint64_t seed, std::uint64_t counter, std::uint64_t high = 0) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  std::uint32_t c0 = static_cast<std::uint32_t>(counter), c1 = static_cast<std::uint32_t>(counter >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(high), c3 = static_cast<std::uint32_t>(high >> 32);
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, hi1;
    const std::uint32_t lo0 = mulhilo32(m0, c0, &hi0);
    const std::uint32_t lo1 = mulhilo32(m1, c2, &hi1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += w0;
    k1 += w1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

/// 32 random bits for element `i` of a draw that starts at block `offset`.
ACCRUE_HD std::uint32_t philox_bits(std::uint64_t seed, std::uint64_t offset, std::uint64_t i) {
  return philox4x32_10(seed, offset + i / 4).v[i % 4];
}

/// Uniform in [0, 1) with 24 random bits, the resolution of float32.
ACCRUE_HD float uniform_from_bits(std::uint32_t bits) { return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f); }

/// Uniform in (0, 1], safe under log().
ACCRUE_HD float uniform_open_zero(std::uint32_t bits) {
  return static_cast<float>((bits >> 8) + 1) * (1.0f / 16777216.0f);
}

/// Standard normal for element `i` by Box-Muller: lanes 0,1 and 2,3 of a block pair up.
ACCRUE_HD float normal_at(std::uint64_t seed, std::uint64_t offset, std::uint64_t i) {
  const Philox4 block = philox4x32_10(seed, offset + i / 4);
  const unsigned lane = static_cast<unsigned>(i % 4);
  const unsigned first = lane & 2u;
  const float u1 = uniform_open_zero(block.v[first]);
  const float u2 = uniform_from_bits(block.v[first + 1]);
  const float radius = sqrtf(-2.0f * logf(u1));
  const float angle = 6.283185307179586f * u2;
  return (lane & 1u) ? radius * sinf(angle) : radius * cosf(angle);
}

}  // namespace accrue::kernels::common
