#pragma once
// The CPU backend's cross entropy functions over raw host memory, called by kernels/cross_entropy.cpp;
// defined in kernels/cpu/cross_entropy.cpp.

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/common/cross_entropy.hpp"
#include "accrue/kernels/cross_entropy.hpp"

namespace accrue::kernels::cpu {

/// Position of the first of B labels (or embedding indices) outside [0, C), or -1.
/// The first index whose label is outside [0, C) and is not `ignore`, or -1.
std::int64_t first_out_of_range(const std::int32_t* labels, std::int64_t B, std::int64_t C,
                                std::int64_t ignore = common::no_ignored_label);
/// A row whose label is `ignore` has loss 0 and gradient 0.
void cross_entropy_forward(const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C,
                           float smoothing, std::int64_t ignore, float* loss, float* lse);
void cross_entropy_backward(const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C,
                            float smoothing, std::int64_t ignore, const float* lse, const float* g, float* dlogits,
                            bool accumulate);

}  // namespace accrue::kernels::cpu
