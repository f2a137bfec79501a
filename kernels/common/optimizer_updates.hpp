#pragma once
// Per-element optimizer updates with PyTorch's equations and operation order (torch.optim.SGD,
// Adam and AdamW, single-tensor path), so that a step matches PyTorch to float32 rounding.
// Scalars that depend only on the step count (bias corrections) are computed once on the host.
//
// The options that switch terms on and off are template parameters, so each combination compiles
// to a branch-free loop body that vectorises; kernels pick the instantiation once per tensor.

#include <cmath>

#include "accrue/kernels/common/macros.hpp"

namespace accrue::kernels::common {

struct SgdHyper {
  float lr;
  float momentum;
  float dampening;
  float weight_decay;
  bool nesterov;
  bool maximize;
  /// The momentum buffer does not exist yet: it starts as the gradient itself.
  bool first_step;
};

template <bool Momentum, bool Decay, bool Nesterov, bool Maximize, bool FirstStep>
ACCRUE_HD void sgd_update(float* p, float g, float* momentum_buffer, SgdHyper h) {
  float d = Maximize ? -g : g;
  if constexpr (Decay) d += h.weight_decay * *p;
  if constexpr (Momentum) {
    const float buf = FirstStep ? d : *momentum_buffer * h.momentum + (1.0f - h.dampening) * d;
    *momentum_buffer = buf;
    d = Nesterov ? d + h.momentum * buf : buf;
  }
  *p += -h.lr * d;
}

struct AdamHyper {
  float lr;
  float beta1;
  float beta2;
  float eps;
  float weight_decay;
  /// AdamW: weight decay scales the parameter instead of adding to the gradient.
  bool decoupled;
  bool amsgrad;
  bool maximize;
  /// AdamW's 1 - lr * weight_decay, computed in double on the host as PyTorch does.
  float decay_factor;
  /// lr / (1 - beta1^t)
  float step_size;
  /// sqrt(1 - beta2^t)
  float bias_correction2_sqrt;
};

template <bool Decay, bool Decoupled, bool Amsgrad, bool Maximize>
ACCRUE_HD void adam_update(float* p, float g, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq, AdamHyper h) {
  float d = Maximize ? -g : g;
  if constexpr (Decay) {
    if constexpr (Decoupled)
      *p *= h.decay_factor;
    else
      d += h.weight_decay * *p;
  }
  const float m = *exp_avg * h.beta1 + (1.0f - h.beta1) * d;
  const float v = *exp_avg_sq * h.beta2 + (1.0f - h.beta2) * d * d;
  *exp_avg = m;
  *exp_avg_sq = v;
  float second = v;
  if constexpr (Amsgrad) {
    second = *max_exp_avg_sq > v ? *max_exp_avg_sq : v;
    *max_exp_avg_sq = second;
  }
  const float denom = sqrtf(second) / h.bias_correction2_sqrt + h.eps;
  *p += -h.step_size * m / denom;
}

}  // namespace accrue::kernels::common
