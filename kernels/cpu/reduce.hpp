#pragma once
// The CPU backend's reduce functions over raw host memory, called by kernels/reduce.cpp;
// defined in kernels/cpu/reduce.cpp.

#include <cstdint>
#include <span>

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/common/broadcast.hpp"
#include "accrue/kernels/reduce.hpp"

namespace accrue::kernels::cpu {

void sum_dim(const float* x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, float* out,
             bool accumulate);
void expand_dim(const float* g, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, float* out,
                bool accumulate);
void argmax_rows(const float* x, std::int64_t rows, std::int64_t C, std::int32_t* out);
double sum_of_squares(const float* x, std::int64_t n);
void sum_to_shape(const float* dy, const Shape& dy_shape, float* d, const Shape& d_shape, float scale, bool accumulate);

}  // namespace accrue::kernels::cpu
