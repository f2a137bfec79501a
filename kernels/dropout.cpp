#include "accrue/kernels/dropout.hpp"

#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

void dropout_forward(const Tensor& x, const Tensor& y, float p, std::uint64_t seed, std::uint64_t offset) {
  expect_tensors("dropout_forward", y.device(), DType::f32, {&x, &y});
  ACCRUE_ASSERT(x.numel() == y.numel() && p >= 0.0f && p < 1.0f);
  y.bump_version();
  if (y.device().is_cpu()) return cpu::dropout_apply(x.data<float>(), y.data<float>(), y.numel(), p, seed, offset, false);
  unsupported_device("dropout_forward", y.device());
}

void dropout_backward(const Tensor& dy, const Tensor& dx, float p, std::uint64_t seed, std::uint64_t offset,
                      bool accumulate) {
  expect_tensors("dropout_backward", dx.device(), DType::f32, {&dy, &dx});
  ACCRUE_ASSERT(dy.numel() == dx.numel() && p >= 0.0f && p < 1.0f);
  dx.bump_version();
  if (dx.device().is_cpu())
    return cpu::dropout_apply(dy.data<float>(), dx.data<float>(), dx.numel(), p, seed, offset, accumulate);
  unsupported_device("dropout_backward", dx.device());
}

}  // namespace accrue::kernels
