#pragma once
// The CPU backend's reduce functions over raw host memory, called by kernels/reduce.cpp;
// defined in kernels/cpu/reduce.cpp.

#include <cstdint>
#include <span>

#include "../../framework/core/tensor.hpp"
#include "../common/broadcast.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(sum_dim, void(const float* x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale,
                                float* out, bool accumulate));
ACCRUE_CPU_KERNEL(expand_dim, void(const float* g, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale,
                                   float* out, bool accumulate));
ACCRUE_CPU_KERNEL(argmax_rows, void(const float* x, std::int64_t rows, std::int64_t C, std::int32_t* out));
ACCRUE_CPU_KERNEL(sum_of_squares, double(const float* x, std::int64_t n));
ACCRUE_CPU_KERNEL(sum_to_shape, void(const float* dy, const Shape& dy_shape, float* d, const Shape& d_shape,
                                     float scale, bool accumulate));

}  // namespace accrue::kernels::cpu
