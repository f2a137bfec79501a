#pragma once
// The CPU backend's norm functions over raw host memory, called by kernels/norm.cpp;
// defined in kernels/cpu/norm.cpp.

#include <cstdint>

#include "../../framework/core/tensor.hpp"
#include "variant.hpp"
#include "../common/norm.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(group_norm_forward, void(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                           float* rstd, const common::NormShape& s, float eps));
ACCRUE_CPU_KERNEL(group_norm_backward,
                  void(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                       float* dx, float* dgamma, float* dbeta, const common::NormShape& s));
ACCRUE_CPU_KERNEL(batch_norm_forward_training,
                  void(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                       float* running_mean, float* running_var, const common::NormShape& s, float momentum, float eps));
ACCRUE_CPU_KERNEL(batch_norm_backward,
                  void(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                       float* dx, float* dgamma, float* dbeta, const common::NormShape& s));

}  // namespace accrue::kernels::cpu
