#include "accrue/kernels/pool.hpp"

#include "accrue/config.hpp"
#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

void pool2d_forward(const Tensor& x, const Tensor& y, const Window2d& g, PoolMode mode) {
  expect_tensors("pool2d_forward", y.device(), DType::f32, {&x, &y});
  ACCRUE_ASSERT(x.numel() == g.N * g.C * g.H * g.W && y.numel() == g.N * g.C * g.P() * g.Q());
  y.bump_version();
  if (y.device().is_cpu()) return cpu::pool2d_forward(x.data<float>(), y.data<float>(), g, mode);
#if ACCRUE_WITH_CUDA
  if (y.device().is_cuda()) return cuda::pool2d_forward(y.device().index(), ptr<float>(x), ptr<float>(y), g, mode);
#endif
  unsupported_device("pool2d_forward", y.device());
}

void pool2d_backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const Window2d& g,
                     PoolMode mode, bool accumulate) {
  expect_tensors("pool2d_backward", dx.device(), DType::f32, {&x, &y, &dy, &dx});
  ACCRUE_ASSERT(dx.numel() == x.numel() && dy.numel() == y.numel());
  dx.bump_version();
  if (dx.device().is_cpu())
    return cpu::pool2d_backward(x.data<float>(), dy.data<float>(), dx.data<float>(), g, mode, accumulate);
#if ACCRUE_WITH_CUDA
  if (dx.device().is_cuda())
    return cuda::pool2d_backward(dx.device().index(), ptr<float>(x), ptr<float>(y), ptr<float>(dy), ptr<float>(dx),
                                 g, mode, accumulate);
#endif
  unsupported_device("pool2d_backward", dx.device());
}

}  // namespace accrue::kernels
