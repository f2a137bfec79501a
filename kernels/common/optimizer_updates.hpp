#pragma once
// Per-element optimizer updates. SGD, Adam, AdamW, RMSprop and Adagrad follow PyTorch's equations
// and operation order (torch.optim's single-tensor path), so that a step matches PyTorch to float32
// rounding; LARS, LAMB and Lion follow their papers. Scalars that depend only on the step count
// (bias corrections, decayed rates) or on whole tensors (trust ratios) are computed on the host.
//
// The options that switch terms on and off are template parameters, so each combination compiles
// to a branch-free loop body that vectorises; kernels pick the instantiation once per tensor.

#include <cmath>

#include "macros.hpp"

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

struct RmspropHyper {
  float lr;
  float alpha;
  /// 1 - alpha, computed in double on the host as PyTorch does.
  float one_minus_alpha;
  float eps;
  float weight_decay;
  float momentum;
  /// Subtracts the running mean of the gradient from its running square (keeps grad_avg).
  bool centered;
};

// torch.optim.RMSprop: square_avg.mul_(alpha).addcmul_(g, g, value=1 - alpha); centered, the
// running mean of g is subtracted; momentum accumulates g / avg.
template <bool Decay, bool Centered, bool Momentum>
ACCRUE_HD void rmsprop_update(float* p, float g, float* square_avg, float* grad_avg, float* momentum_buffer,
                              RmspropHyper h) {
  float d = g;
  if constexpr (Decay) d += h.weight_decay * *p;
  const float sq = *square_avg * h.alpha + h.one_minus_alpha * d * d;
  *square_avg = sq;
  float avg;
  if constexpr (Centered) {
    const float mean = *grad_avg * h.alpha + h.one_minus_alpha * d;
    *grad_avg = mean;
    avg = sqrtf(sq + -1.0f * mean * mean);
  } else {
    avg = sqrtf(sq);
  }
  avg += h.eps;
  if constexpr (Momentum) {
    const float buf = *momentum_buffer * h.momentum + d / avg;
    *momentum_buffer = buf;
    *p += -h.lr * buf;
  } else {
    *p += -h.lr * d / avg;
  }
}

struct AdagradHyper {
  /// lr / (1 + (step - 1) * lr_decay), computed in double on the host.
  float clr;
  float eps;
  float weight_decay;
};

// torch.optim.Adagrad: state_sum.addcmul_(g, g); param.addcdiv_(g, state_sum.sqrt() + eps, value=-clr).
template <bool Decay>
ACCRUE_HD void adagrad_update(float* p, float g, float* sum, AdagradHyper h) {
  float d = g;
  if constexpr (Decay) d += h.weight_decay * *p;
  const float s = *sum + d * d;
  *sum = s;
  *p += -h.clr * d / (sqrtf(s) + h.eps);
}

struct LionHyper {
  float lr;
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  /// 1 - lr * weight_decay, computed in double on the host.
  float decay_factor;
};

// Lion (Chen et al. 2023, Algorithm 2): the sign of an interpolation of momentum and gradient, with
// decoupled weight decay; the momentum is updated after, with beta2.
template <bool Decay>
ACCRUE_HD void lion_update(float* p, float g, float* exp_avg, LionHyper h) {
  const float c = *exp_avg * h.beta1 + h.one_minus_beta1 * g;
  const float sign = static_cast<float>((c > 0.0f) - (c < 0.0f));
  if constexpr (Decay) *p *= h.decay_factor;
  *p += -h.lr * sign;
  *exp_avg = *exp_avg * h.beta2 + h.one_minus_beta2 * g;
}

struct LarsHyper {
  /// lr times the tensor's trust ratio (lr alone for an excluded tensor), in double on the host.
  float scaled_lr;
  float momentum;
  /// 0 for an excluded tensor.
  float weight_decay;
};

// LARS (You, Gitman, Ginsburg 2017, Algorithm 1): v = m v + lr * trust * (g + wd w); w -= v. The
// learning rate is inside the momentum, as in the paper (LARC/apex put it outside).
template <bool Momentum, bool Decay>
ACCRUE_HD void lars_update(float* p, float g, float* momentum_buffer, LarsHyper h) {
  float d = g;
  if constexpr (Decay) d += h.weight_decay * *p;
  if constexpr (Momentum) {
    const float v = *momentum_buffer * h.momentum + h.scaled_lr * d;
    *momentum_buffer = v;
    *p -= v;
  } else {
    *p -= h.scaled_lr * d;
  }
}

struct LambHyper {
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float eps;
  /// 0 for an excluded tensor.
  float weight_decay;
  /// 1 - beta^t, or 1 without bias correction, in double on the host.
  float bias_correction1, bias_correction2;
};

// LAMB's first pass (You et al. 2019, Algorithm 2): the Adam moments, and the update
// r = m^ / (sqrt(v^) + eps) + wd * w, whose norm sets the trust ratio of the second pass
// (w -= lr * ratio * r). Returns r.
ACCRUE_HD float lamb_moments(float p, float g, float* exp_avg, float* exp_avg_sq, LambHyper h) {
  const float m = *exp_avg * h.beta1 + h.one_minus_beta1 * g;
  const float v = *exp_avg_sq * h.beta2 + h.one_minus_beta2 * g * g;
  *exp_avg = m;
  *exp_avg_sq = v;
  return (m / h.bias_correction1) / (sqrtf(v / h.bias_correction2) + h.eps) + h.weight_decay * p;
}

// A parameter's moving average: avg = decay avg + (1 - decay) w (EMA; SWA's equal average is
// decay n / (n + 1) after n updates). `one_minus_decay` is computed in double on the host.
ACCRUE_HD void average_update(float* avg, float w, float decay, float one_minus_decay) {
  *avg = *avg * decay + one_minus_decay * w;
}

}  // namespace accrue::kernels::common
