#pragma once
// Element types. float32 is the training type; float16 and bfloat16 are the mixed-precision
// compute types; int32 holds class labels.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "half.hpp"

namespace accrue {

enum class DType : std::uint8_t { f32, f16, bf16, i32 };

/// Bytes per element.
constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  return 0;
}

/// PyTorch's spelling: "float32", "float16", "bfloat16", "int32".
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::i32: return "int32";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

constexpr bool is_floating(DType t) { return t != DType::i32; }

/// The DType of a C++ element type, for typed access (`tensor.data<float>()`).
template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<bfloat16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<float16> {
  static constexpr DType value = DType::f16;
};

/// Short names, as `.amp(dtype::f16)` reads: dtype::f32, dtype::f16, dtype::bf16, dtype::i32.
namespace dtype {
inline constexpr DType f32 = DType::f32;
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType i32 = DType::i32;
}  // namespace dtype

/// The 16-bit floating-point types of mixed precision.
constexpr bool is_low_precision(DType t) { return t == DType::f16 || t == DType::bf16; }

}  // namespace accrue
