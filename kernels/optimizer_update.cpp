#include "accrue/kernels/optimizer_update.hpp"

#include <vector>

#include "accrue/kernels/cpu/optimizer_update.hpp"
#include "accrue/kernels/cuda/backend.hpp"
#include "accrue/kernels/cuda/optimizer_update.hpp"
#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

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

}  // namespace accrue::kernels
