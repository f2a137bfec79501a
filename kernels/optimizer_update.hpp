#pragma once
// Fused optimizer updates (math in common/optimizer_updates.hpp). The list forms update every
// parameter of a group in one call: one pass per tensor on the CPU, a few multi-tensor launches
// for all of them on a GPU.

#include <span>

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/common/optimizer_updates.hpp"

namespace accrue::kernels {

/// A parameter with its gradient and SGD state; `momentum_buffer` may be undefined without momentum.
struct SgdSlot {
  Tensor param, grad, momentum_buffer;
};
/// A parameter with its gradient and Adam state; `max_exp_avg_sq` may be undefined without amsgrad.
struct AdamSlot {
  Tensor param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq;
};

/// One SGD step of every slot (all on one device, float32).
void sgd_update(std::span<const SgdSlot> slots, const common::SgdHyper& hyper);
/// One Adam/AdamW step of every slot (all on one device, float32).
void adam_update(std::span<const AdamSlot> slots, const common::AdamHyper& hyper);

/// One tensor's step.
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const common::SgdHyper& hyper);
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const common::AdamHyper& hyper);

}  // namespace accrue::kernels
