#pragma once
// The bfloat16 GEMM's packed operands (bf16.hpp), which its packing loops (bf16_pack.hpp) fill.

#include <cstdint>

#include "../../../framework/core/tensor.hpp"

namespace accrue::kernels::cpu {

/// Rows and columns of C that the packed layouts pad to.
inline constexpr std::int64_t bf16_block = 16;

/// A packed as bfloat16 rows along K: Mp x Kp, padded with zeros (Mp to 16; Kp to 32 where the
/// kernel is AMX, to 2 otherwise). The buffer
/// comes from the CPU allocator (reused between calls, counted as temporaries).
struct Bf16A {
  Bf16A(std::int64_t M, std::int64_t K);
  /// In `into` (values(M, K) of them), which the caller owns, instead of a buffer of its own.
  Bf16A(std::int64_t M, std::int64_t K, std::uint16_t* into);
  static std::int64_t values(std::int64_t M, std::int64_t K);
  std::int64_t M, K, Mp, Kp;
  Tensor buffer;
  std::uint16_t* data;
};

/// B packed as pairs along K: (Kp / 2) x Np x 2, padded with zeros (Kp as Bf16A's, Np to 16).
struct Bf16B {
  Bf16B(std::int64_t K, std::int64_t N);
  /// In `into` (values(K, N) of them), which the caller owns.
  Bf16B(std::int64_t K, std::int64_t N, std::uint16_t* into);
  static std::int64_t values(std::int64_t K, std::int64_t N);
  /// Where pair row q (k = 2q, 2q + 1) of column n goes: the 32-bit word q * Np + n.
  std::uint32_t* pairs() const { return reinterpret_cast<std::uint32_t*>(data); }
  /// That word, of b(2q, n) (`lo`) and b(2q + 1, n) (`hi`) as bfloat16 bits.
  static std::uint32_t pair(std::uint16_t lo, std::uint16_t hi) {
    return static_cast<std::uint32_t>(lo) | (std::uint32_t{hi} << 16);
  }
  std::int64_t K, N, Kp, Np;
  Tensor buffer;
  std::uint16_t* data;
};

}  // namespace accrue::kernels::cpu
