#include "dropout.hpp"

#include "cpu/dropout.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/dropout.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

void dropout_forward(const Tensor& x, const Tensor& y, float p, std::uint64_t seed, std::uint64_t offset) {
  expect_tensors("dropout_forward", y.device(), x.dtype(), {&x, &y});
  ACCRUE_ASSERT(x.numel() == y.numel() && p >= 0.0f && p < 1.0f && is_floating(x.dtype()));
  y.bump_version();
  return dispatch(
      Op::dropout, y.device(), y.dtype(),
      [&] {
        return cpu::dropout_apply(x.dtype(), x.data_ptr(), y.data_ptr(), y.numel(), p, seed, offset, false);
      },
      [&](int index) {
        return ACCRUE_CUDA(dropout_apply)(index, x.dtype(), x.data_ptr(), y.data_ptr(), y.numel(), p, seed, offset,
                                   false);
      });
}

void dropout_backward(const Tensor& dy, const Tensor& dx, float p, std::uint64_t seed, std::uint64_t offset,
                      bool accumulate) {
  expect_tensors("dropout_backward", dx.device(), dx.dtype(), {&dy, &dx});
  ACCRUE_ASSERT(dy.numel() == dx.numel() && p >= 0.0f && p < 1.0f && is_floating(dx.dtype()));
  dx.bump_version();
  return dispatch(
      Op::dropout, dx.device(), dx.dtype(),
      [&] {
        return cpu::dropout_apply(dx.dtype(), dy.data_ptr(), dx.data_ptr(), dx.numel(), p, seed, offset, accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(dropout_apply)(index, dx.dtype(), dy.data_ptr(), dx.data_ptr(), dx.numel(), p, seed,
                                   offset, accumulate);
      });
}

}  // namespace accrue::kernels
