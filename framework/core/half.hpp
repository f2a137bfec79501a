#pragma once
// float16 (IEEE binary16) and bfloat16 storage types with round-to-nearest-even conversion from
// float32, written once for both backends: subnormals, infinities, NaN (kept NaN, made quiet) and
// ties (to even) come out as IEEE 754 specifies. Arithmetic happens in float32: load, compute, store.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "macros.hpp"

namespace accrue {

/// A bfloat16 value: the top 16 bits of a float32 (8-bit exponent, 7-bit mantissa).
struct bfloat16 {
  std::uint16_t bits;
};

/// An IEEE float16 value (5-bit exponent, 10-bit mantissa; largest finite 65504).
struct float16 {
  std::uint16_t bits;
};

namespace kernels::common {

ACCRUE_HD std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

ACCRUE_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

ACCRUE_HD std::uint16_t bf16_bits_from_float(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // NaN: quiet
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit, then truncate.
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

ACCRUE_HD float float_from_bf16_bits(std::uint16_t h) { return bits_float(static_cast<std::uint32_t>(h) << 16); }

ACCRUE_HD std::uint16_t f16_bits_from_float(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x1ffu));  // NaN: quiet
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // 65520 and up round to inf
  if (a >= 0x38800000u) {  // a normal float16: rebias the exponent by 127 - 15 and round the mantissa
    a += 0xc8000fffu + ((a >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (a >> 13));
  }
  if (a >= 0x33000000u) {  // a subnormal float16 (2^-25 <= |f| < 2^-14): units of 2^-24
    const std::uint32_t e = a >> 23;
    const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - e;
    std::uint32_t r = m >> shift;
    const std::uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  return static_cast<std::uint16_t>(sign);  // below half the smallest subnormal: signed zero
}

ACCRUE_HD float float_from_f16_bits(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t e = (h >> 10) & 0x1fu;
  std::uint32_t m = h & 0x3ffu;
  if (e == 0x1fu) return bits_float(sign | 0x7f800000u | (m << 13));  // inf, NaN
  if (e == 0) {
    if (m == 0) return bits_float(sign);
    // A subnormal: m x 2^-24; shift the leading one into the implicit bit.
    e = 113;
    while ((m & 0x400u) == 0) {
      m <<= 1;
      --e;
    }
    return bits_float(sign | (e << 23) | ((m & 0x3ffu) << 13));
  }
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

/// Loads any storage type as float32, and stores float32 into it with rounding to nearest even.
ACCRUE_HD float load(float x) { return x; }
ACCRUE_HD float load(bfloat16 x) { return float_from_bf16_bits(x.bits); }
ACCRUE_HD float load(float16 x) { return float_from_f16_bits(x.bits); }

template <class T>
ACCRUE_HD T store(float x);
template <>
ACCRUE_HD float store<float>(float x) {
  return x;
}
template <>
ACCRUE_HD bfloat16 store<bfloat16>(float x) {
  return bfloat16{bf16_bits_from_float(x)};
}
template <>
ACCRUE_HD float16 store<float16>(float x) {
  return float16{f16_bits_from_float(x)};
}

/// d = v, or d + v (in float32, rounded once) when `accumulate`: how data-movement kernels
/// (permute, copy_columns) write. int32 is only ever copied.
template <class T>
ACCRUE_HD void store_or_add(T& d, T v, bool accumulate) {
  if constexpr (std::is_same_v<T, std::int32_t>) {
    d = v;
  } else {
    d = accumulate ? store<T>(load(d) + load(v)) : v;
  }
}

}  // namespace kernels::common
}  // namespace accrue
