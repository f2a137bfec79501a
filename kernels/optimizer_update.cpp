#include "accrue/kernels/optimizer_update.hpp"

#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const common::SgdHyper& hyper) {
  expect_tensors("sgd_update", param.device(), DType::f32, {&param, &grad});
  ACCRUE_ASSERT(grad.numel() == param.numel());
  const bool momentum = hyper.momentum != 0.0f;
  if (momentum) {
    expect_tensors("sgd_update", param.device(), DType::f32, {&momentum_buffer});
    ACCRUE_ASSERT(momentum_buffer.numel() == param.numel());
    momentum_buffer.bump_version();
  }
  param.bump_version();
  if (param.device().is_cpu())
    return cpu::sgd_update(param.data<float>(), grad.data<float>(), momentum ? momentum_buffer.data<float>() : nullptr,
                           param.numel(), hyper);
  unsupported_device("sgd_update", param.device());
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const common::AdamHyper& hyper) {
  expect_tensors("adam_update", param.device(), DType::f32, {&param, &grad, &exp_avg, &exp_avg_sq});
  if (hyper.amsgrad) expect_tensors("adam_update", param.device(), DType::f32, {&max_exp_avg_sq});
  for (const Tensor* t : {&grad, &exp_avg, &exp_avg_sq}) ACCRUE_ASSERT(t->numel() == param.numel());
  for (const Tensor* t : {&param, &exp_avg, &exp_avg_sq}) t->bump_version();
  if (param.device().is_cpu())
    return cpu::adam_update(param.data<float>(), grad.data<float>(), exp_avg.data<float>(), exp_avg_sq.data<float>(),
                            hyper.amsgrad ? max_exp_avg_sq.data<float>() : nullptr, param.numel(), hyper);
  unsupported_device("adam_update", param.device());
}

}  // namespace accrue::kernels
