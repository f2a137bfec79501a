#include "pool.hpp"

#include "cpu/pool.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/pool.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

namespace {
std::uint16_t* bf16_data(const Tensor& t) { return static_cast<std::uint16_t*>(t.data_ptr()); }
}  // namespace

void pool2d_forward(const Tensor& x, const Tensor& y, const Window2d& g, PoolMode mode) {
  expect_tensors("pool2d_forward", y.device(), y.dtype(), {&x, &y});
  ACCRUE_ASSERT(x.numel() == g.N * g.C * g.H * g.W && y.numel() == g.N * g.C * g.P() * g.Q());
  y.bump_version();
  return dispatch(
      Op::pool2d, y.device(), y.dtype(),
      [&] {
        if (y.dtype() == DType::bf16) return cpu::pool2d_forward_bf16(bf16_data(x), bf16_data(y), g, mode);
        return cpu::pool2d_forward(x.data<float>(), y.data<float>(), g, mode);
      },
      [&](int index) {
        return ACCRUE_CUDA(pool2d_forward)(index, ptr<float>(x), ptr<float>(y), g, mode);
      });
}

void pool2d_backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const Window2d& g,
                     PoolMode mode, bool accumulate) {
  expect_tensors("pool2d_backward", dx.device(), dx.dtype(), {&x, &y, &dy, &dx});
  ACCRUE_ASSERT(dx.numel() == x.numel() && dy.numel() == y.numel());
  dx.bump_version();
  return dispatch(
      Op::pool2d, dx.device(), dx.dtype(),
      [&] {
        if (dx.dtype() == DType::bf16)
          return cpu::pool2d_backward_bf16(bf16_data(x), bf16_data(dy), bf16_data(dx), g, mode, accumulate);
        return cpu::pool2d_backward(x.data<float>(), dy.data<float>(), dx.data<float>(), g, mode, accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(pool2d_backward)(index, ptr<float>(x), ptr<float>(y), ptr<float>(dy), ptr<float>(dx),
                                     g, mode, accumulate);
      });
}

}  // namespace accrue::kernels
