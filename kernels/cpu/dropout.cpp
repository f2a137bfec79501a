#include "../common/dropout.hpp"

#include <algorithm>

#include "../../framework/core/half.hpp"

#include "parallel.hpp"
#include "dropout.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {

namespace {

constexpr std::int64_t lanes = 16;

// The dropout factors of blocks first .. first + 15 (elements 4 first .. 4 first + 63): Philox
// 4x32-10 as common::philox4x32_10 computes it, sixteen blocks side by side so that the compiler
// turns each round into vector instructions.
void dropout_factors64(std::uint64_t seed, std::uint64_t offset, std::uint64_t first, float p, float scale,
                       float* factors) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u, w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  std::uint32_t c0[lanes], c1[lanes], c2[lanes] = {}, c3[lanes] = {};
  for (std::int64_t j = 0; j < lanes; ++j) {
    const std::uint64_t counter = offset + first + static_cast<std::uint64_t>(j);
    c0[j] = static_cast<std::uint32_t>(counter);
    c1[j] = static_cast<std::uint32_t>(counter >> 32);
  }
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    for (std::int64_t j = 0; j < lanes; ++j) {
      const std::uint64_t p0 = static_cast<std::uint64_t>(m0) * c0[j], p1 = static_cast<std::uint64_t>(m1) * c2[j];
      const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1[j] ^ k0;
      const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3[j] ^ k1;
      c1[j] = static_cast<std::uint32_t>(p1);
      c3[j] = static_cast<std::uint32_t>(p0);
      c0[j] = n0;
      c2[j] = n2;
    }
    k0 += w0;
    k1 += w1;
  }
  const std::uint32_t* lane_bits[4] = {c0, c1, c2, c3};
  for (std::int64_t j = 0; j < lanes; ++j)
    for (int lane = 0; lane < 4; ++lane)
      factors[4 * j + lane] = common::uniform_from_bits(lane_bits[lane][j]) < p ? 0.0f : scale;
}

template <class T>
void apply(const T* in, T* out, std::int64_t n, float p, std::uint64_t seed, std::uint64_t offset, bool accumulate) {
  const float scale = 1.0f / (1.0f - p);
  // Each task takes whole runs of 64 elements (16 Philox blocks), the last one possibly short.
  const std::int64_t runs = (n + 4 * lanes - 1) / (4 * lanes);
  parallel_for(runs, 1 << 8, [&](std::int64_t first, std::int64_t last) {
    float factors[4 * lanes];
    for (std::int64_t r = first; r < last; ++r) {
      dropout_factors64(seed, offset, static_cast<std::uint64_t>(r * lanes), p, scale, factors);
      const std::int64_t begin = r * 4 * lanes, end = std::min(begin + 4 * lanes, n);
      for (std::int64_t i = begin; i < end; ++i) {
        const float v = common::load(in[i]) * factors[i - begin];
        out[i] = common::store<T>(accumulate ? common::load(out[i]) + v : v);
      }
    }
  });
}

}  // namespace

void dropout_apply(DType dtype, const void* in, void* out, std::int64_t n, float p, std::uint64_t seed,
                   std::uint64_t offset, bool accumulate) {
  switch (dtype) {
    case DType::f32: return apply(static_cast<const float*>(in), static_cast<float*>(out), n, p, seed, offset, accumulate);
    case DType::bf16:
      return apply(static_cast<const bfloat16*>(in), static_cast<bfloat16*>(out), n, p, seed, offset, accumulate);
    case DType::f16:
      return apply(static_cast<const float16*>(in), static_cast<float16*>(out), n, p, seed, offset, accumulate);
    case DType::i32: break;
  }
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
