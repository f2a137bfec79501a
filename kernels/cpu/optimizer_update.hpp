#pragma once
// The CPU backend's optimizer update functions over raw host memory, called by kernels/optimizer_update.cpp;
// defined in kernels/cpu/optimizer_update.cpp.

#include <span>

#include "../../framework/tensor.hpp"
#include "../common/optimizer_updates.hpp"
#include "variant.hpp"
#include "../optimizer_update.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(sgd_update, void(float* param, const float* grad, float* momentum_buffer, std::int64_t n,
                                   const common::SgdHyper& hyper));
ACCRUE_CPU_KERNEL(adam_update, void(float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                                    float* max_exp_avg_sq, std::int64_t n, const common::AdamHyper& hyper));
ACCRUE_CPU_KERNEL(rmsprop_update, void(float* param, const float* grad, float* square_avg, float* grad_avg,
                                       float* momentum_buffer, std::int64_t n, const common::RmspropHyper& hyper));
ACCRUE_CPU_KERNEL(adagrad_update, void(float* param, const float* grad, float* sum, std::int64_t n,
                                       const common::AdagradHyper& hyper));
ACCRUE_CPU_KERNEL(lion_update, void(float* param, const float* grad, float* exp_avg, std::int64_t n,
                                    const common::LionHyper& hyper));
ACCRUE_CPU_KERNEL(lars_update, void(float* param, const float* grad, float* momentum_buffer, std::int64_t n,
                                    const common::LarsHyper& hyper));
ACCRUE_CPU_KERNEL(average_update, void(float* average, const float* param, std::int64_t n, float decay,
                                       float one_minus_decay));
ACCRUE_CPU_KERNEL(lamb_moments, void(const float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                                     float* update, std::int64_t n, const common::LambHyper& hyper));

}  // namespace accrue::kernels::cpu
