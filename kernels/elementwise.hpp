#pragma once
// Element-wise kernels: functions of one tensor, of two broadcast tensors, fills and copies.
// The math lives in kernels/common (unary.hpp, binary.hpp), shared with the CUDA backend.

#include <cstdint>
#include <span>

#include "../framework/core/tensor.hpp"
#include "common/binary.hpp"
#include "common/broadcast.hpp"
#include "common/unary.hpp"

namespace accrue::kernels {

/// t = f(t) for every float32 tensor of `tensors` (all on one device): one launch on a GPU.
void unary_in_place(UnaryOp op, UnaryParams params, std::span<const Tensor> tensors);
/// y = f(x); x and y have the same number of elements and one float dtype (y may be x). Low
/// precision is computed in float32 and rounded at the store.
void unary_forward(UnaryOp op, UnaryParams params, const Tensor& x, const Tensor& y);
/// dx (+)= dy * f'(x), given y = f(x); all four of x's dtype.
void unary_backward(UnaryOp op, UnaryParams params, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                    bool accumulate);

/// out = a (op) b with NumPy broadcasting; out has the broadcast shape.
void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
/// The gradient of operand `which` (0: a, 1: b) from dy, summed over the dimensions it was
/// broadcast along, written (or added, when `accumulate`) into `d`, which has that operand's shape.
void binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dy, int which, const Tensor& d,
                     bool accumulate);

void fill(const Tensor& t, float value);
/// dst = src, element by element (same number of elements and dtype).
void copy(const Tensor& src, const Tensor& dst);
/// dst = src between any two devices (same number of elements and dtype); returns when dst may be
/// read on its device (and, for a host dst, on the host).
void transfer(const Tensor& src, const Tensor& dst);
/// dst += alpha * src.
void add_into(const Tensor& dst, const Tensor& src, float alpha = 1.0f);
/// Uniform [low, high) or normal(mean, stddev) values from Philox block `offset` of `seed`.
void fill_uniform(const Tensor& t, float low, float high, std::uint64_t seed, std::uint64_t offset);
void fill_normal(const Tensor& t, float mean, float stddev, std::uint64_t seed, std::uint64_t offset);

/// The broadcast shape of a and b (NumPy rules), or ShapeError naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

}  // namespace accrue::kernels
