#pragma once
// The CPU backend's cross entropy functions over raw host memory, called by kernels/cross_entropy.cpp;
// defined in kernels/cpu/cross_entropy.cpp.

#include "../../framework/core/tensor.hpp"
#include "../common/cross_entropy.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

/// The first of B labels (or embedding indices) outside [0, C) that is not `ignore`
/// (common::no_ignored_label: none is), or -1.
ACCRUE_CPU_KERNEL(first_out_of_range,
                  std::int64_t(const std::int32_t* labels, std::int64_t B, std::int64_t C, std::int64_t ignore));
/// A row whose label is `ignore` has loss 0 and gradient 0.
ACCRUE_CPU_KERNEL(cross_entropy_forward,
                  void(const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C, float smoothing,
                       std::int64_t ignore, float* loss, float* lse));
ACCRUE_CPU_KERNEL(cross_entropy_backward,
                  void(const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C, float smoothing,
                       std::int64_t ignore, const float* lse, const float* g, float* dlogits, bool accumulate));

}  // namespace accrue::kernels::cpu
