#include <type_traits>

#include "parallel.hpp"
#include "optimizer_update.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {
namespace {

constexpr std::int64_t update_grain = 1 << 15;

// Calls f(std::bool_constant<b>...) for the runtime flags, so f can pick a template instantiation.
template <class F>
void with_flags(F&& f) {
  f();
}
template <class F, class... Rest>
void with_flags(F&& f, bool first, Rest... rest) {
  if (first)
    with_flags([&](auto... tags) { f(std::true_type{}, tags...); }, rest...);
  else
    with_flags([&](auto... tags) { f(std::false_type{}, tags...); }, rest...);
}

}  // namespace

// Each loop copies the hyper-parameters by value and the pointers into __restrict locals, so the
// compiler knows the stores cannot change them and vectorises the update.
void sgd_update(float* param, const float* grad, float* momentum_buffer, std::int64_t n, const common::SgdHyper& hyper) {
  const common::SgdHyper h = hyper;
  with_flags(
      [&](auto momentum, auto decay, auto nesterov, auto maximize, auto first) {
        parallel_for(n, update_grain, [=](std::int64_t begin, std::int64_t end) {
          const common::SgdHyper local = h;
          float* __restrict p = param;
          const float* __restrict g = grad;
          float* __restrict buf = momentum_buffer;
          for (std::int64_t i = begin; i < end; ++i)
            common::sgd_update<momentum(), decay(), nesterov(), maximize(), first()>(p + i, g[i], buf + i, local);
        });
      },
      h.momentum != 0.0f, h.weight_decay != 0.0f, h.nesterov, h.maximize, h.first_step);
}

void adam_update(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq,
                 std::int64_t n, const common::AdamHyper& hyper) {
  const common::AdamHyper h = hyper;
  with_flags(
      [&](auto decay, auto decoupled, auto amsgrad, auto maximize) {
        parallel_for(n, update_grain, [=](std::int64_t begin, std::int64_t end) {
          const common::AdamHyper local = h;
          float* __restrict p = param;
          const float* __restrict g = grad;
          float* __restrict m = exp_avg;
          float* __restrict v = exp_avg_sq;
          float* __restrict vmax = max_exp_avg_sq;
          for (std::int64_t i = begin; i < end; ++i)
            common::adam_update<decay(), decoupled(), amsgrad(), maximize()>(p + i, g[i], m + i, v + i, vmax + i, local);
        });
      },
      h.weight_decay != 0.0f, h.decoupled, h.amsgrad, h.maximize);
}

void rmsprop_update(float* param, const float* grad, float* square_avg, float* grad_avg, float* momentum_buffer,
                    std::int64_t n, const common::RmspropHyper& hyper) {
  const common::RmspropHyper h = hyper;
  with_flags(
      [&](auto decay, auto centered, auto momentum) {
        parallel_for(n, update_grain, [=](std::int64_t begin, std::int64_t end) {
          const common::RmspropHyper local = h;
          float* __restrict p = param;
          const float* __restrict g = grad;
          float* __restrict sq = square_avg;
          float* __restrict mean = grad_avg;
          float* __restrict buf = momentum_buffer;
          for (std::int64_t i = begin; i < end; ++i)
            common::rmsprop_update<decay(), centered(), momentum()>(p + i, g[i], sq + i, mean + i, buf + i, local);
        });
      },
      h.weight_decay != 0.0f, h.centered, h.momentum != 0.0f);
}

void adagrad_update(float* param, const float* grad, float* sum, std::int64_t n, const common::AdagradHyper& hyper) {
  const common::AdagradHyper h = hyper;
  with_flags(
      [&](auto decay) {
        parallel_for(n, update_grain, [=](std::int64_t begin, std::int64_t end) {
          const common::AdagradHyper local = h;
          float* __restrict p = param;
          const float* __restrict g = grad;
          float* __restrict s = sum;
          for (std::int64_t i = begin; i < end; ++i) common::adagrad_update<decay()>(p + i, g[i], s + i, local);
        });
      },
      h.weight_decay != 0.0f);
}

void lion_update(float* param, const float* grad, float* exp_avg, std::int64_t n, const common::LionHyper& hyper) {
  const common::LionHyper h = hyper;
  with_flags(
      [&](auto decay) {
        parallel_for(n, update_grain, [=](std::int64_t begin, std::int64_t end) {
          const common::LionHyper local = h;
          float* __restrict p = param;
          const float* __restrict g = grad;
          float* __restrict m = exp_avg;
          for (std::int64_t i = begin; i < end; ++i) common::lion_update<decay()>(p + i, g[i], m + i, local);
        });
      },
      h.decay_factor != 1.0f);
}

void lars_update(float* param, const float* grad, float* momentum_buffer, std::int64_t n, const common::LarsHyper& hyper) {
  const common::LarsHyper h = hyper;
  with_flags(
      [&](auto momentum, auto decay) {
        parallel_for(n, update_grain, [=](std::int64_t begin, std::int64_t end) {
          const common::LarsHyper local = h;
          float* __restrict p = param;
          const float* __restrict g = grad;
          float* __restrict v = momentum_buffer;
          for (std::int64_t i = begin; i < end; ++i) common::lars_update<momentum(), decay()>(p + i, g[i], v + i, local);
        });
      },
      h.momentum != 0.0f, h.weight_decay != 0.0f);
}

void average_update(float* average, const float* param, std::int64_t n, float decay, float one_minus_decay) {
  parallel_for(n, update_grain, [=](std::int64_t begin, std::int64_t end) {
    const float d = decay, od = one_minus_decay;
    float* __restrict a = average;
    const float* __restrict p = param;
    for (std::int64_t i = begin; i < end; ++i) common::average_update(a + i, p[i], d, od);
  });
}

void lamb_moments(const float* param, const float* grad, float* exp_avg, float* exp_avg_sq, float* update,
                  std::int64_t n, const common::LambHyper& hyper) {
  const common::LambHyper h = hyper;
  parallel_for(n, update_grain, [=](std::int64_t begin, std::int64_t end) {
    const common::LambHyper local = h;
    const float* __restrict p = param;
    const float* __restrict g = grad;
    float* __restrict m = exp_avg;
    float* __restrict v = exp_avg_sq;
    float* __restrict r = update;
    for (std::int64_t i = begin; i < end; ++i) r[i] = common::lamb_moments(p[i], g[i], m + i, v + i, local);
  });
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
