#pragma once
// The CPU backend's softmax functions over raw host memory, called by kernels/softmax.cpp;
// defined in kernels/cpu/softmax.cpp.

#include <cstdint>

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/softmax.hpp"

namespace accrue::kernels::cpu {

void softmax_forward(const float* x, float* y, std::int64_t outer, std::int64_t D, std::int64_t inner, bool log);
void softmax_backward(const float* y, const float* dy, float* dx, std::int64_t outer, std::int64_t D, std::int64_t inner,
                      bool log, bool accumulate);

void masked_softmax_forward(const float* x, const float* mask, float* y, std::int64_t rows, std::int64_t D,
                            std::int64_t T_q, float scale, bool causal);
void masked_softmax_backward(const float* y, const float* dy, float* dx, std::int64_t rows, std::int64_t D, float scale,
                             bool accumulate);

}  // namespace accrue::kernels::cpu
