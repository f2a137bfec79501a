#pragma once
// The CPU backend's softmax functions over raw host memory, called by kernels/softmax.cpp;
// defined in kernels/cpu/softmax.cpp.

#include <cstdint>

#include "../../framework/core/tensor.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(softmax_forward,
                  void(const float* x, float* y, std::int64_t outer, std::int64_t D, std::int64_t inner, bool log));
ACCRUE_CPU_KERNEL(softmax_backward, void(const float* y, const float* dy, float* dx, std::int64_t outer, std::int64_t D,
                                         std::int64_t inner, bool log, bool accumulate));

ACCRUE_CPU_KERNEL(masked_softmax_forward, void(const float* x, const float* mask, float* y, std::int64_t rows,
                                               std::int64_t D, std::int64_t T_q, float scale, bool causal));
ACCRUE_CPU_KERNEL(masked_softmax_backward, void(const float* y, const float* dy, float* dx, std::int64_t rows,
                                                std::int64_t D, float scale, bool accumulate));

}  // namespace accrue::kernels::cpu
