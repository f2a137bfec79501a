#pragma once
// The CPU backend's cross entropy functions over raw host memory, called by kernels/cross_entropy.cpp;
// defined in kernels/cpu/cross_entropy.cpp.

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/cross_entropy.hpp"

namespace accrue::kernels::cpu {

/// Position of the first of B labels (or embedding indices) outside [0, C), or -1.
std::int64_t first_out_of_range(const std::int32_t* labels, std::int64_t B, std::int64_t C);
void cross_entropy_forward(const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C,
                           float smoothing, float* loss, float* lse);
void cross_entropy_backward(const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C,
                            float smoothing, const float* lse, const float* g, float* dlogits, bool accumulate);

}  // namespace accrue::kernels::cpu
