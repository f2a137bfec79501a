#pragma once
// Softmax and log-softmax along one dimension of a tensor seen as (outer, D, inner).

#include <cstdint>

#include "accrue/framework/tensor.hpp"

namespace accrue::kernels {

void softmax_forward(const Tensor& x, const Tensor& y, std::int64_t outer, std::int64_t D, std::int64_t inner, bool log);
/// dx (+)= the gradient through softmax (or log-softmax) given its output y and dy.
void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx, std::int64_t outer, std::int64_t D,
                      std::int64_t inner, bool log, bool accumulate);

}  // namespace accrue::kernels
