#pragma once
// Fused optimizer updates over one parameter tensor (math in common/optimizer_updates.hpp).

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/common/optimizer_updates.hpp"

namespace accrue::kernels {

/// One SGD step of `param` from `grad`; `momentum_buffer` is ignored (may be undefined) without momentum.
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const common::SgdHyper& hyper);
/// One Adam/AdamW step; `max_exp_avg_sq` is ignored (may be undefined) without amsgrad.
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const common::AdamHyper& hyper);

namespace cpu {
void sgd_update(float* param, const float* grad, float* momentum_buffer, std::int64_t n, const common::SgdHyper& hyper);
void adam_update(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq,
                 std::int64_t n, const common::AdamHyper& hyper);
}  // namespace cpu

}  // namespace accrue::kernels
