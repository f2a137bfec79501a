#pragma once
// Softmax and log-softmax along one dimension of a tensor seen as (outer, D, inner).

#include <cstdint>

#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

void softmax_forward(const Tensor& x, const Tensor& y, std::int64_t outer, std::int64_t D, std::int64_t inner, bool log);
/// dx (+)= the gradient through softmax (or log-softmax) given its output y and dy.
void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx, std::int64_t outer, std::int64_t D,
                      std::int64_t inner, bool log, bool accumulate);

/// Attention's softmax over the last dimension of x seen as (rows, D), rows counting T_q query
/// positions each: y = softmax(scale x + mask) with the causal rule and an additive `mask` (T_q, D)
/// (undefined: none) applied; see common::masked_softmax_row. float32.
void masked_softmax_forward(const Tensor& x, const Tensor& mask, const Tensor& y, std::int64_t rows, std::int64_t D,
                            std::int64_t T_q, float scale, bool causal);
/// dx (+)= the gradient through masked_softmax_forward given its output y and dy.
void masked_softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx, std::int64_t rows, std::int64_t D,
                             float scale, bool accumulate);

}  // namespace accrue::kernels
