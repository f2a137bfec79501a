#pragma once
// The CPU backend's elementwise functions over raw host memory, called by kernels/elementwise.cpp;
// defined in kernels/cpu/elementwise.cpp.

#include <cstdint>
#include <span>

#include "../../framework/core/tensor.hpp"
#include "../common/binary.hpp"
#include "../common/broadcast.hpp"
#include "../common/unary.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(unary_forward,
                  void(UnaryOp op, UnaryParams params, DType dtype, const void* x, void* y, std::int64_t n));
ACCRUE_CPU_KERNEL(unary_backward, void(UnaryOp op, UnaryParams params, DType dtype, const void* x, const void* y,
                                       const void* dy, void* dx, std::int64_t n, bool accumulate));
ACCRUE_CPU_KERNEL(binary_forward, void(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
                                       const Shape& b_shape, float* out, const Shape& out_shape));
ACCRUE_CPU_KERNEL(binary_backward,
                  void(BinaryOp op, const float* a, const Shape& a_shape, const float* b, const Shape& b_shape,
                       const float* dy, const Shape& out_shape, int which, float* d, bool accumulate));
ACCRUE_CPU_KERNEL(fill, void(float* t, std::int64_t n, float value));
ACCRUE_CPU_KERNEL(add_into, void(DType dtype, void* dst, const void* src, std::int64_t n, float alpha));
ACCRUE_CPU_KERNEL(fill_uniform,
                  void(float* t, std::int64_t n, float low, float high, std::uint64_t seed, std::uint64_t offset));
ACCRUE_CPU_KERNEL(fill_normal,
                  void(float* t, std::int64_t n, float mean, float stddev, std::uint64_t seed, std::uint64_t offset));

}  // namespace accrue::kernels::cpu
