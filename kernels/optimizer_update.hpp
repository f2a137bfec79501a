#pragma once
// Fused optimizer updates (math in common/optimizer_updates.hpp). The list forms update every
// parameter of a group in one call: one pass per tensor on the CPU, a few multi-tensor launches
// for all of them on a GPU. LARS and LAMB go one tensor at a time: each has its own trust ratio.

#include <span>

#include "../framework/tensor.hpp"
#include "common/optimizer_updates.hpp"

namespace accrue::kernels {

/// A parameter with its gradient and SGD state; `momentum_buffer` may be undefined without momentum.
struct SgdSlot {
  Tensor param, grad, momentum_buffer;
};
/// A parameter with its gradient and Adam state; `max_exp_avg_sq` may be undefined without amsgrad.
struct AdamSlot {
  Tensor param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq;
};

/// A parameter with its gradient and RMSprop state; `grad_avg` is undefined unless centered,
/// `momentum_buffer` without momentum.
struct RmspropSlot {
  Tensor param, grad, square_avg, grad_avg, momentum_buffer;
};
/// A parameter with its gradient and Adagrad's running sum of squares.
struct AdagradSlot {
  Tensor param, grad, sum;
};
/// A parameter with its gradient and Lion's momentum.
struct LionSlot {
  Tensor param, grad, exp_avg;
};

/// One SGD step of every slot (all on one device, float32).
void sgd_update(std::span<const SgdSlot> slots, const common::SgdHyper& hyper);
/// One Adam/AdamW step of every slot (all on one device, float32).
void adam_update(std::span<const AdamSlot> slots, const common::AdamHyper& hyper);

void rmsprop_update(std::span<const RmspropSlot> slots, const common::RmspropHyper& hyper);
void adagrad_update(std::span<const AdagradSlot> slots, const common::AdagradHyper& hyper);
void lion_update(std::span<const LionSlot> slots, const common::LionHyper& hyper);
/// One LARS step of one tensor, whose trust ratio is in hyper.scaled_lr; `momentum_buffer` is
/// undefined without momentum.
void lars_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const common::LarsHyper& hyper);
/// LAMB's first pass over one tensor: the moments updated, the update r written to `update` (of the
/// parameter's shape); the second pass is add_into(param, update, -lr * trust_ratio).
void lamb_moments(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  const Tensor& update, const common::LambHyper& hyper);

/// averages[i] = decay averages[i] + (1 - decay) params[i] for every i (float32, one device): the
/// parameters' moving average after an optimizer step.
void average_update(std::span<const Tensor> averages, std::span<const Tensor> params, double decay);

/// One tensor's step.
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const common::SgdHyper& hyper);
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const common::AdamHyper& hyper);

}  // namespace accrue::kernels
