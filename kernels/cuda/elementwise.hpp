#pragma once
// Element-wise ops, as the CUDA backend's host functions (elementwise.cu), called by kernels/elementwise.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>
#include <span>

#include "../../framework/core/dtype.hpp"
#include "../common/binary.hpp"
#include "../common/broadcast.hpp"
#include "../common/unary.hpp"

namespace accrue::kernels::cuda {

void unary_forward(int device, UnaryOp op, UnaryParams params, DType dtype, const void* x, void* y, std::int64_t n);
void unary_backward(int device, UnaryOp op, UnaryParams params, DType dtype, const void* x, const void* y,
                    const void* dy, void* dx, std::int64_t n, bool accumulate);
void binary_forward(int device, BinaryOp op, const float* a, const float* b, float* out, std::int64_t n,
                    const common::BroadcastIndex& index);
/// The gradient of operand `which` at every output element (d has the output's shape).
void binary_backward(int device, BinaryOp op, const float* a, const float* b, const float* dy, int which, float* d,
                     std::int64_t n, const common::BroadcastIndex& index, bool accumulate);
void fill(int device, DType dtype, void* t, std::int64_t n, float value);
void add_into(int device, DType dtype, void* dst, const void* src, std::int64_t n, float alpha);
void fill_uniform(int device, float* t, std::int64_t n, float low, float high, std::uint64_t seed, std::uint64_t offset);
void fill_normal(int device, float* t, std::int64_t n, float mean, float stddev, std::uint64_t seed,
                 std::uint64_t offset);
/// t = f(t) in place over all tensors (clipping).
void unary_in_place(int device, UnaryOp op, UnaryParams params, std::span<float* const> tensors,
                    std::span<const std::int64_t> sizes);

}  // namespace accrue::kernels::cuda
