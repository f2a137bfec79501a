#pragma once
// The CPU backend's elementwise functions over raw host memory, called by kernels/elementwise.cpp;
// defined in kernels/cpu/elementwise.cpp.

#include <cstdint>
#include <span>

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/common/binary.hpp"
#include "accrue/kernels/common/broadcast.hpp"
#include "accrue/kernels/common/unary.hpp"
#include "accrue/kernels/elementwise.hpp"

namespace accrue::kernels::cpu {

void unary_forward(UnaryOp op, UnaryParams params, DType dtype, const void* x, void* y, std::int64_t n);
void unary_backward(UnaryOp op, UnaryParams params, DType dtype, const void* x, const void* y, const void* dy, void* dx,
                    std::int64_t n, bool accumulate);
void binary_forward(BinaryOp op, const float* a, const Shape& a_shape, const float* b, const Shape& b_shape, float* out,
                    const Shape& out_shape);
void binary_backward(BinaryOp op, const float* a, const Shape& a_shape, const float* b, const Shape& b_shape,
                     const float* dy, const Shape& out_shape, int which, float* d, bool accumulate);
void fill(float* t, std::int64_t n, float value);
void add_into(DType dtype, void* dst, const void* src, std::int64_t n, float alpha);
void fill_uniform(float* t, std::int64_t n, float low, float high, std::uint64_t seed, std::uint64_t offset);
void fill_normal(float* t, std::int64_t n, float mean, float stddev, std::uint64_t seed, std::uint64_t offset);

}  // namespace accrue::kernels::cpu
