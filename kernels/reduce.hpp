#pragma once
// Reductions over one dimension of a tensor seen as (outer, D, inner), their broadcast inverse,
// and row-wise argmax. A reduction over everything is outer = inner = 1.

#include <cstdint>
#include <span>

#include "../framework/core/tensor.hpp"
#include "common/broadcast.hpp"

namespace accrue::kernels {

/// out[o, i] (+)= scale * sum_d x[o, d, i]; x of any float dtype, out float32.
void sum_dim(const Tensor& x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, const Tensor& out,
             bool accumulate);
/// out[o, d, i] (+)= scale * g[o, i]: the gradient of sum_dim.
void expand_dim(const Tensor& g, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, const Tensor& out,
                bool accumulate);
/// d (+)= scale * dy summed over the dimensions along which d's shape was broadcast to dy's: the
/// gradient of a broadcast operand of add or sub.
void sum_to_shape(const Tensor& dy, const Tensor& d, float scale, bool accumulate);
/// The index arithmetic of sum_to_shape for a gradient dy and an operand of shape `d` that was
/// broadcast to dy's shape.
common::SumToShapeIndex sum_to_shape_index(const Shape& dy, const Shape& d);
/// sum of x^2 over all elements, accumulated in double: squared L2 norms of gradients. inf or NaN
/// when x holds them.
double sum_of_squares(const Tensor& x);
/// The same over all `tensors` (one device, float32) at once: the global gradient norm's square,
/// in one pass on a GPU.
double sum_of_squares(std::span<const Tensor> tensors);
/// out[r] = index of the largest x[r, :] (the first on ties), as int32, for x of shape (rows, C).
void argmax_rows(const Tensor& x, const Tensor& out);

}  // namespace accrue::kernels
