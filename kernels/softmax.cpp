#include "accrue/kernels/softmax.hpp"

#include "accrue/config.hpp"
#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

void softmax_forward(const Tensor& x, const Tensor& y, std::int64_t outer, std::int64_t D, std::int64_t inner, bool log) {
  expect_tensors("softmax_forward", y.device(), DType::f32, {&x, &y});
  ACCRUE_ASSERT(x.numel() == outer * D * inner && y.numel() == x.numel());
  y.bump_version();
  if (y.device().is_cpu()) return cpu::softmax_forward(x.data<float>(), y.data<float>(), outer, D, inner, log);
#if ACCRUE_WITH_CUDA
  if (y.device().is_cuda())
    return cuda::softmax_forward(y.device().index(), ptr<float>(x), ptr<float>(y), outer, D, inner, log);
#endif
  unsupported_device("softmax_forward", y.device());
}

void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx, std::int64_t outer, std::int64_t D,
                      std::int64_t inner, bool log, bool accumulate) {
  expect_tensors("softmax_backward", dx.device(), DType::f32, {&y, &dy, &dx});
  ACCRUE_ASSERT(y.numel() == outer * D * inner && dy.numel() == y.numel() && dx.numel() == y.numel());
  dx.bump_version();
  if (dx.device().is_cpu())
    return cpu::softmax_backward(y.data<float>(), dy.data<float>(), dx.data<float>(), outer, D, inner, log, accumulate);
#if ACCRUE_WITH_CUDA
  if (dx.device().is_cuda())
    return cuda::softmax_backward(dx.device().index(), ptr<float>(y), ptr<float>(dy), ptr<float>(dx), outer, D,
                                  inner, log, accumulate);
#endif
  unsupported_device("softmax_backward", dx.device());
}

}  // namespace accrue::kernels
