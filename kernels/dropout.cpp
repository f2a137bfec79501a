#include "accrue/kernels/dropout.hpp"

#include "accrue/config.hpp"
#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

void dropout_forward(const Tensor& x, const Tensor& y, float p, std::uint64_t seed, std::uint64_t offset) {
  expect_tensors("dropout_forward", y.device(), x.dtype(), {&x, &y});
  ACCRUE_ASSERT(x.numel() == y.numel() && p >= 0.0f && p < 1.0f && is_floating(x.dtype()));
  y.bump_version();
  if (y.device().is_cpu())
    return cpu::dropout_apply(x.dtype(), x.data_ptr(), y.data_ptr(), y.numel(), p, seed, offset, false);
#if ACCRUE_WITH_CUDA
  if (y.device().is_cuda())
    return cuda::dropout_apply(y.device().index(), x.dtype(), x.data_ptr(), y.data_ptr(), y.numel(), p, seed, offset,
                               false);
#endif
  unsupported_device("dropout_forward", y.device());
}

void dropout_backward(const Tensor& dy, const Tensor& dx, float p, std::uint64_t seed, std::uint64_t offset,
                      bool accumulate) {
  expect_tensors("dropout_backward", dx.device(), dx.dtype(), {&dy, &dx});
  ACCRUE_ASSERT(dy.numel() == dx.numel() && p >= 0.0f && p < 1.0f && is_floating(dx.dtype()));
  dx.bump_version();
  if (dx.device().is_cpu())
    return cpu::dropout_apply(dx.dtype(), dy.data_ptr(), dx.data_ptr(), dx.numel(), p, seed, offset, accumulate);
#if ACCRUE_WITH_CUDA
  if (dx.device().is_cuda())
    return cuda::dropout_apply(dx.device().index(), dx.dtype(), dy.data_ptr(), dx.data_ptr(), dx.numel(), p, seed,
                               offset, accumulate);
#endif
  unsupported_device("dropout_backward", dx.device());
}

}  // namespace accrue::kernels
