#pragma once
// Every optimizer's update rule, written once for both backends: a new optimizer is its rule here
// (and a line in ACCRUE_OPTIMIZER_RULES) and its class in framework/optim; kernels/optimizer_update.cpp
// and the CPU and CUDA bodies run any rule over a list of tensors.
//
// A rule is a struct with
//   name         its kernel's name ("sgd_update"), which is also its Op's and its CUDA export's;
//   State        the names of its state tensors, in order, and `states`, their count;
//   Hyper        its hyper-parameters for one step;
//   switches(h)  the options that switch terms on and off, as bools;
//   step<switches...>(i, t, h), the update of element i of the tensors t;
// and where they apply
//   needs(h)     which state tensors the options use, when some may be undefined (else all);
//   leaves_param true when it does not write the parameter (LAMB's first pass writes its update).
// The switches are template parameters of step, so each combination compiles to a branch-free
// loop body that vectorises; the bodies pick the instantiation once per call.
//
// SGD, Adam, AdamW, RMSprop and Adagrad follow PyTorch's equations and operation order
// (torch.optim's single-tensor path), so that a step matches PyTorch to float32 rounding; LARS,
// LAMB and Lion follow their papers. Scalars that depend only on the step count (bias corrections,
// decayed rates) or on whole tensors (trust ratios) are computed on the host.

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../../framework/core/macros.hpp"

namespace accrue::kernels::common {

/// The tensors one update runs over, as raw pointers of one device: param[i] is updated from
/// grad[i] and state[k][i] (k a rule's State); a state the options leave off may be null.
template <int States>
struct UpdateTensors {
  float* param;
  const float* grad;
  float* state[States > 0 ? States : 1];
  std::int64_t n;
};

/// torch.optim.SGD.
struct SgdRule {
  static constexpr const char* name = "sgd_update";
  enum State { momentum_buffer, states };
  struct Hyper {
    float lr, momentum, dampening, weight_decay;
    bool nesterov, maximize;
    /// The momentum buffer does not exist yet: it starts as the gradient itself.
    bool first_step;
  };
  static std::array<bool, 5> switches(const Hyper& h) {
    return {h.momentum != 0.0f, h.weight_decay != 0.0f, h.nesterov, h.maximize, h.first_step};
  }
  static std::array<bool, states> needs(const Hyper& h) { return {h.momentum != 0.0f}; }

  template <bool Momentum, bool Decay, bool Nesterov, bool Maximize, bool FirstStep>
  ACCRUE_HD static void step(std::int64_t i, const UpdateTensors<states>& t, const Hyper& h) {
    float& p = t.param[i];
    float d = Maximize ? -t.grad[i] : t.grad[i];
    if constexpr (Decay) d += h.weight_decay * p;
    if constexpr (Momentum) {
      float& buffer = t.state[momentum_buffer][i];
      const float buf = FirstStep ? d : buffer * h.momentum + (1.0f - h.dampening) * d;
      buffer = buf;
      d = Nesterov ? d + h.momentum * buf : buf;
    }
    p += -h.lr * d;
  }
};

/// torch.optim.Adam and torch.optim.AdamW.
struct AdamRule {
  static constexpr const char* name = "adam_update";
  enum State { exp_avg, exp_avg_sq, max_exp_avg_sq, states };
  struct Hyper {
    float lr, beta1, beta2, eps, weight_decay;
    /// AdamW: weight decay scales the parameter instead of adding to the gradient.
    bool decoupled;
    bool amsgrad, maximize;
    /// AdamW's 1 - lr * weight_decay, computed in double on the host as PyTorch does.
    float decay_factor;
    /// lr / (1 - beta1^t)
    float step_size;
    /// sqrt(1 - beta2^t)
    float bias_correction2_sqrt;
  };
  static std::array<bool, 4> switches(const Hyper& h) {
    return {h.weight_decay != 0.0f, h.decoupled, h.amsgrad, h.maximize};
  }
  static std::array<bool, states> needs(const Hyper& h) { return {true, true, h.amsgrad}; }

  template <bool Decay, bool Decoupled, bool Amsgrad, bool Maximize>
  ACCRUE_HD static void step(std::int64_t i, const UpdateTensors<states>& t, const Hyper& h) {
    float& p = t.param[i];
    float d = Maximize ? -t.grad[i] : t.grad[i];
    if constexpr (Decay) {
      if constexpr (Decoupled)
        p *= h.decay_factor;
      else
        d += h.weight_decay * p;
    }
    const float m = t.state[exp_avg][i] * h.beta1 + (1.0f - h.beta1) * d;
    const float v = t.state[exp_avg_sq][i] * h.beta2 + (1.0f - h.beta2) * d * d;
    t.state[exp_avg][i] = m;
    t.state[exp_avg_sq][i] = v;
    float second = v;
    if constexpr (Amsgrad) {
      float& max_v = t.state[max_exp_avg_sq][i];
      second = max_v > v ? max_v : v;
      max_v = second;
    }
    const float denom = sqrtf(second) / h.bias_correction2_sqrt + h.eps;
    p += -h.step_size * m / denom;
  }
};

/// torch.optim.RMSprop: square_avg.mul_(alpha).addcmul_(g, g, value=1 - alpha); centered, the
/// running mean of g is subtracted; momentum accumulates g / avg.
struct RmspropRule {
  static constexpr const char* name = "rmsprop_update";
  enum State { square_avg, grad_avg, momentum_buffer, states };
  struct Hyper {
    float lr, alpha;
    /// 1 - alpha, computed in double on the host as PyTorch does.
    float one_minus_alpha;
    float eps, weight_decay, momentum;
    /// Subtracts the running mean of the gradient from its running square (keeps grad_avg).
    bool centered;
  };
  static std::array<bool, 3> switches(const Hyper& h) {
    return {h.weight_decay != 0.0f, h.centered, h.momentum != 0.0f};
  }
  static std::array<bool, states> needs(const Hyper& h) { return {true, h.centered, h.momentum != 0.0f}; }

  template <bool Decay, bool Centered, bool Momentum>
  ACCRUE_HD static void step(std::int64_t i, const UpdateTensors<states>& t, const Hyper& h) {
    float& p = t.param[i];
    float d = t.grad[i];
    if constexpr (Decay) d += h.weight_decay * p;
    const float sq = t.state[square_avg][i] * h.alpha + h.one_minus_alpha * d * d;
    t.state[square_avg][i] = sq;
    float avg;
    if constexpr (Centered) {
      const float mean = t.state[grad_avg][i] * h.alpha + h.one_minus_alpha * d;
      t.state[grad_avg][i] = mean;
      avg = sqrtf(sq + -1.0f * mean * mean);
    } else {
      avg = sqrtf(sq);
    }
    avg += h.eps;
    if constexpr (Momentum) {
      const float buf = t.state[momentum_buffer][i] * h.momentum + d / avg;
      t.state[momentum_buffer][i] = buf;
      p += -h.lr * buf;
    } else {
      p += -h.lr * d / avg;
    }
  }
};

/// torch.optim.Adagrad: state_sum.addcmul_(g, g); param.addcdiv_(g, state_sum.sqrt() + eps, value=-clr).
struct AdagradRule {
  static constexpr const char* name = "adagrad_update";
  enum State { sum, states };
  struct Hyper {
    /// lr / (1 + (step - 1) * lr_decay), computed in double on the host.
    float clr;
    float eps, weight_decay;
  };
  static std::array<bool, 1> switches(const Hyper& h) { return {h.weight_decay != 0.0f}; }

  template <bool Decay>
  ACCRUE_HD static void step(std::int64_t i, const UpdateTensors<states>& t, const Hyper& h) {
    float d = t.grad[i];
    if constexpr (Decay) d += h.weight_decay * t.param[i];
    const float s = t.state[sum][i] + d * d;
    t.state[sum][i] = s;
    t.param[i] += -h.clr * d / (sqrtf(s) + h.eps);
  }
};

/// Lion (Chen et al. 2023, Algorithm 2): the sign of an interpolation of momentum and gradient,
/// with decoupled weight decay; the momentum is updated after, with beta2.
struct LionRule {
  static constexpr const char* name = "lion_update";
  enum State { exp_avg, states };
  struct Hyper {
    float lr, beta1, one_minus_beta1, beta2, one_minus_beta2;
    /// 1 - lr * weight_decay, computed in double on the host.
    float decay_factor;
  };
  static std::array<bool, 1> switches(const Hyper& h) { return {h.decay_factor != 1.0f}; }

  template <bool Decay>
  ACCRUE_HD static void step(std::int64_t i, const UpdateTensors<states>& t, const Hyper& h) {
    const float g = t.grad[i];
    float& m = t.state[exp_avg][i];
    const float c = m * h.beta1 + h.one_minus_beta1 * g;
    const float sign = static_cast<float>((c > 0.0f) - (c < 0.0f));
    if constexpr (Decay) t.param[i] *= h.decay_factor;
    t.param[i] += -h.lr * sign;
    m = m * h.beta2 + h.one_minus_beta2 * g;
  }
};

/// LARS (You, Gitman, Ginsburg 2017, Algorithm 1): v = m v + lr * trust * (g + wd w); w -= v. The
/// learning rate is inside the momentum, as in the paper (LARC/apex put it outside). One tensor a
/// call: each has its own trust ratio.
struct LarsRule {
  static constexpr const char* name = "lars_update";
  enum State { momentum_buffer, states };
  struct Hyper {
    /// lr times the tensor's trust ratio (lr alone for an excluded tensor), in double on the host.
    float scaled_lr;
    float momentum;
    /// 0 for an excluded tensor.
    float weight_decay;
  };
  static std::array<bool, 2> switches(const Hyper& h) { return {h.momentum != 0.0f, h.weight_decay != 0.0f}; }
  static std::array<bool, states> needs(const Hyper& h) { return {h.momentum != 0.0f}; }

  template <bool Momentum, bool Decay>
  ACCRUE_HD static void step(std::int64_t i, const UpdateTensors<states>& t, const Hyper& h) {
    float& p = t.param[i];
    float d = t.grad[i];
    if constexpr (Decay) d += h.weight_decay * p;
    if constexpr (Momentum) {
      float& buffer = t.state[momentum_buffer][i];
      buffer = buffer * h.momentum + h.scaled_lr * d;
      p -= buffer;
    } else {
      p -= h.scaled_lr * d;
    }
  }
};

/// LAMB's first pass (You et al. 2019, Algorithm 2): the Adam moments, and the update
/// r = m^ / (sqrt(v^) + eps) + wd * w written to the state `update` (of the parameter's shape),
/// whose norm sets the trust ratio of the second pass (w -= lr * ratio * r, an add_into). One tensor
/// a call.
struct LambRule {
  static constexpr const char* name = "lamb_moments";
  static constexpr bool leaves_param = true;
  enum State { exp_avg, exp_avg_sq, update, states };
  struct Hyper {
    float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
    /// 0 for an excluded tensor.
    float weight_decay;
    /// 1 - beta^t, or 1 without bias correction, in double on the host.
    float bias_correction1, bias_correction2;
  };
  static std::array<bool, 0> switches(const Hyper&) { return {}; }

  template <bool... None>
  ACCRUE_HD static void step(std::int64_t i, const UpdateTensors<states>& t, const Hyper& h) {
    const float g = t.grad[i];
    const float m = t.state[exp_avg][i] * h.beta1 + h.one_minus_beta1 * g;
    const float v = t.state[exp_avg_sq][i] * h.beta2 + h.one_minus_beta2 * g * g;
    t.state[exp_avg][i] = m;
    t.state[exp_avg_sq][i] = v;
    t.state[update][i] = (m / h.bias_correction1) / (sqrtf(v / h.bias_correction2) + h.eps) + h.weight_decay * t.param[i];
  }
};

/// Not an optimizer but run as one after its step: a parameter's moving average,
/// avg = decay avg + (1 - decay) w (EMA; SWA's equal average is decay n / (n + 1) after n updates).
/// Its `param` is the average, which it writes; its `grad` the parameter, which it reads.
struct AverageRule {
  static constexpr const char* name = "average_update";
  enum State { states };
  struct Hyper {
    float decay;
    /// 1 - decay, computed in double on the host.
    float one_minus_decay;
  };
  static std::array<bool, 0> switches(const Hyper&) { return {}; }

  template <bool... None>
  ACCRUE_HD static void step(std::int64_t i, const UpdateTensors<states>& t, const Hyper& h) {
    t.param[i] = t.param[i] * h.decay + h.one_minus_decay * t.grad[i];
  }
};

/// Every rule: kernels/optimizer_update.cpp, the CPU and CUDA bodies and the CUDA backend's exports
/// instantiate each rule of this list.
#define ACCRUE_OPTIMIZER_RULES(X) \
  X(SgdRule) X(AdamRule) X(RmspropRule) X(AdagradRule) X(LionRule) X(LarsRule) X(LambRule) X(AverageRule)

/// The state tensors a step of Rule uses: Rule::needs, or all of them.
template <class Rule>
std::array<bool, Rule::states> needed_states(const typename Rule::Hyper& h) {
  if constexpr (requires { Rule::needs(h); }) {
    return Rule::needs(h);
  } else {
    std::array<bool, Rule::states> all;
    all.fill(true);
    return all;
  }
}

/// Whether a step of Rule writes the parameter.
template <class Rule>
constexpr bool writes_param() {
  if constexpr (requires { Rule::leaves_param; })
    return !Rule::leaves_param;
  else
    return true;
}

/// Calls f(std::bool_constant<s[0]>{}, std::bool_constant<s[1]>{}, ...): makes the run-time switches of
/// a rule the template arguments of its step. Host code.
template <std::size_t N, class F, class... Tags>
void with_switches(const std::array<bool, N>& s, F&& f, Tags... tags) {
  if constexpr (sizeof...(Tags) == N)
    f(tags...);
  else if (s[sizeof...(Tags)])
    with_switches(s, f, tags..., std::true_type{});
  else
    with_switches(s, f, tags..., std::false_type{});
}

}  // namespace accrue::kernels::common
