#include "optimizer_update.hpp"

#include <vector>

#include "cpu/optimizer_update.hpp"
#include "cuda/backend.hpp"
#include "cuda/optimizer_update.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {
namespace {

// Checks a parameter, its gradient and the defined tensors of `written` (float32 on `device`, the
// parameter's size), and marks those as written.
void expect_update(std::string_view kernel, Device device, const Tensor& param, const Tensor& grad,
                   std::initializer_list<const Tensor*> written) {
  expect_tensors(kernel, device, DType::f32, {&param, &grad});
  ACCRUE_ASSERT(grad.numel() == param.numel());
  for (const Tensor* t : written) {
    if (!t->defined()) continue;
    expect_tensors(kernel, device, DType::f32, {t});
    ACCRUE_ASSERT(t->numel() == param.numel());
    t->bump_version();
  }
}

float* host_or_null(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }
float* device_or_null(const Tensor& t) { return t.defined() ? ptr<float>(t) : nullptr; }

}  // namespace

void sgd_update(std::span<const SgdSlot> slots, const common::SgdHyper& hyper) {
  if (slots.empty()) return;
  const Device device = slots.front().param.device();
  const bool momentum = hyper.momentum != 0.0f;
  for (const SgdSlot& s : slots) {
    expect_tensors("sgd_update", device, DType::f32, {&s.param, &s.grad});
    ACCRUE_ASSERT(s.grad.numel() == s.param.numel());
    if (momentum) {
      expect_tensors("sgd_update", device, DType::f32, {&s.momentum_buffer});
      ACCRUE_ASSERT(s.momentum_buffer.numel() == s.param.numel());
      s.momentum_buffer.bump_version();
    }
    s.param.bump_version();
  }
  return dispatch(
      Op::sgd_update, device, DType::f32,
      [&] {
        for (const SgdSlot& s : slots)
          cpu::sgd_update(s.param.data<float>(), s.grad.data<float>(), momentum ? s.momentum_buffer.data<float>() : nullptr,
                          s.param.numel(), hyper);
        return;
      },
      [&](int index) {
        std::vector<cuda::SgdPointers> pointers;
        for (const SgdSlot& s : slots)
          pointers.push_back({ptr<float>(s.param), ptr<float>(s.grad), momentum ? ptr<float>(s.momentum_buffer) : nullptr,
                              s.param.numel()});
        return ACCRUE_CUDA(sgd_update)(index, pointers, hyper);
      });
}

void adam_update(std::span<const AdamSlot> slots, const common::AdamHyper& hyper) {
  if (slots.empty()) return;
  const Device device = slots.front().param.device();
  for (const AdamSlot& s : slots) {
    expect_tensors("adam_update", device, DType::f32, {&s.param, &s.grad, &s.exp_avg, &s.exp_avg_sq});
    if (hyper.amsgrad) expect_tensors("adam_update", device, DType::f32, {&s.max_exp_avg_sq});
    for (const Tensor* t : {&s.grad, &s.exp_avg, &s.exp_avg_sq}) ACCRUE_ASSERT(t->numel() == s.param.numel());
    for (const Tensor* t : {&s.param, &s.exp_avg, &s.exp_avg_sq}) t->bump_version();
    if (hyper.amsgrad) s.max_exp_avg_sq.bump_version();
  }
  return dispatch(
      Op::adam_update, device, DType::f32,
      [&] {
        for (const AdamSlot& s : slots)
          cpu::adam_update(s.param.data<float>(), s.grad.data<float>(), s.exp_avg.data<float>(), s.exp_avg_sq.data<float>(),
                           hyper.amsgrad ? s.max_exp_avg_sq.data<float>() : nullptr, s.param.numel(), hyper);
        return;
      },
      [&](int index) {
        std::vector<cuda::AdamPointers> pointers;
        for (const AdamSlot& s : slots)
          pointers.push_back({ptr<float>(s.param), ptr<float>(s.grad), ptr<float>(s.exp_avg), ptr<float>(s.exp_avg_sq),
                              hyper.amsgrad ? ptr<float>(s.max_exp_avg_sq) : nullptr, s.param.numel()});
        return ACCRUE_CUDA(adam_update)(index, pointers, hyper);
      });
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const common::SgdHyper& hyper) {
  const SgdSlot slot{param, grad, momentum_buffer};
  sgd_update(std::span<const SgdSlot>(&slot, 1), hyper);
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const common::AdamHyper& hyper) {
  const AdamSlot slot{param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq};
  adam_update(std::span<const AdamSlot>(&slot, 1), hyper);
}

void average_update(std::span<const Tensor> averages, std::span<const Tensor> params, double decay) {
  ACCRUE_ASSERT(averages.size() == params.size());
  if (params.empty()) return;
  const Device device = params.front().device();
  for (std::size_t i = 0; i < params.size(); ++i) {
    expect_tensors("average_update", device, DType::f32, {&averages[i], &params[i]});
    ACCRUE_ASSERT(averages[i].numel() == params[i].numel());
    averages[i].bump_version();
  }
  const auto d = static_cast<float>(decay), one_minus = static_cast<float>(1.0 - decay);
  return dispatch(
      Op::average_update, device, DType::f32,
      [&] {
        for (std::size_t i = 0; i < params.size(); ++i)
          cpu::average_update(averages[i].data<float>(), params[i].data<float>(), params[i].numel(), d, one_minus);
      },
      [&](int index) {
        std::vector<cuda::AveragePointers> pointers;
        for (std::size_t i = 0; i < params.size(); ++i)
          pointers.push_back({ptr<float>(averages[i]), ptr<float>(params[i]), params[i].numel()});
        return ACCRUE_CUDA(average_update)(index, pointers, d, one_minus);
      });
}

void rmsprop_update(std::span<const RmspropSlot> slots, const common::RmspropHyper& hyper) {
  if (slots.empty()) return;
  const Device device = slots.front().param.device();
  for (const RmspropSlot& s : slots) {
    ACCRUE_ASSERT(s.square_avg.defined() && (!hyper.centered || s.grad_avg.defined()) &&
                  (hyper.momentum == 0.0f || s.momentum_buffer.defined()));
    expect_update("rmsprop_update", device, s.param, s.grad, {&s.param, &s.square_avg, &s.grad_avg, &s.momentum_buffer});
  }
  return dispatch(
      Op::rmsprop_update, device, DType::f32,
      [&] {
        for (const RmspropSlot& s : slots)
          cpu::rmsprop_update(s.param.data<float>(), s.grad.data<float>(), s.square_avg.data<float>(),
                              host_or_null(s.grad_avg), host_or_null(s.momentum_buffer), s.param.numel(), hyper);
      },
      [&](int index) {
        std::vector<cuda::RmspropPointers> pointers;
        for (const RmspropSlot& s : slots)
          pointers.push_back({ptr<float>(s.param), ptr<float>(s.grad), ptr<float>(s.square_avg),
                              device_or_null(s.grad_avg), device_or_null(s.momentum_buffer), s.param.numel()});
        return ACCRUE_CUDA(rmsprop_update)(index, pointers, hyper);
      });
}

void adagrad_update(std::span<const AdagradSlot> slots, const common::AdagradHyper& hyper) {
  if (slots.empty()) return;
  const Device device = slots.front().param.device();
  for (const AdagradSlot& s : slots) {
    ACCRUE_ASSERT(s.sum.defined());
    expect_update("adagrad_update", device, s.param, s.grad, {&s.param, &s.sum});
  }
  return dispatch(
      Op::adagrad_update, device, DType::f32,
      [&] {
        for (const AdagradSlot& s : slots)
          cpu::adagrad_update(s.param.data<float>(), s.grad.data<float>(), s.sum.data<float>(), s.param.numel(), hyper);
      },
      [&](int index) {
        std::vector<cuda::AdagradPointers> pointers;
        for (const AdagradSlot& s : slots)
          pointers.push_back({ptr<float>(s.param), ptr<float>(s.grad), ptr<float>(s.sum), s.param.numel()});
        return ACCRUE_CUDA(adagrad_update)(index, pointers, hyper);
      });
}

void lion_update(std::span<const LionSlot> slots, const common::LionHyper& hyper) {
  if (slots.empty()) return;
  const Device device = slots.front().param.device();
  for (const LionSlot& s : slots) {
    ACCRUE_ASSERT(s.exp_avg.defined());
    expect_update("lion_update", device, s.param, s.grad, {&s.param, &s.exp_avg});
  }
  return dispatch(
      Op::lion_update, device, DType::f32,
      [&] {
        for (const LionSlot& s : slots)
          cpu::lion_update(s.param.data<float>(), s.grad.data<float>(), s.exp_avg.data<float>(), s.param.numel(), hyper);
      },
      [&](int index) {
        std::vector<cuda::LionPointers> pointers;
        for (const LionSlot& s : slots)
          pointers.push_back({ptr<float>(s.param), ptr<float>(s.grad), ptr<float>(s.exp_avg), s.param.numel()});
        return ACCRUE_CUDA(lion_update)(index, pointers, hyper);
      });
}

void lars_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const common::LarsHyper& hyper) {
  ACCRUE_ASSERT(hyper.momentum == 0.0f || momentum_buffer.defined());
  expect_update("lars_update", param.device(), param, grad, {&param, &momentum_buffer});
  return dispatch(
      Op::lars_update, param.device(), DType::f32,
      [&] {
        cpu::lars_update(param.data<float>(), grad.data<float>(), host_or_null(momentum_buffer), param.numel(), hyper);
      },
      [&](int index) {
        return ACCRUE_CUDA(lars_update)(index, ptr<float>(param), ptr<float>(grad), device_or_null(momentum_buffer),
                                        param.numel(), hyper);
      });
}

void lamb_moments(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  const Tensor& update, const common::LambHyper& hyper) {
  ACCRUE_ASSERT(exp_avg.defined() && exp_avg_sq.defined() && update.defined());
  expect_update("lamb_moments", param.device(), param, grad, {&exp_avg, &exp_avg_sq, &update});
  return dispatch(
      Op::lamb_moments, param.device(), DType::f32,
      [&] {
        cpu::lamb_moments(param.data<float>(), grad.data<float>(), exp_avg.data<float>(), exp_avg_sq.data<float>(),
                          update.data<float>(), param.numel(), hyper);
      },
      [&](int index) {
        return ACCRUE_CUDA(lamb_moments)(index, ptr<float>(param), ptr<float>(grad), ptr<float>(exp_avg),
                                         ptr<float>(exp_avg_sq), ptr<float>(update), param.numel(), hyper);
      });
}

}  // namespace accrue::kernels
