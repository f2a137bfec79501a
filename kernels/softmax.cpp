#include "softmax.hpp"

#include "cpu/softmax.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/softmax.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

void softmax_forward(const Tensor& x, const Tensor& y, std::int64_t outer, std::int64_t D, std::int64_t inner, bool log) {
  expect_tensors("softmax_forward", y.device(), DType::f32, {&x, &y});
  ACCRUE_ASSERT(x.numel() == outer * D * inner && y.numel() == x.numel());
  y.bump_version();
  return dispatch(
      Op::softmax, y.device(), y.dtype(),
      [&] {
        return cpu::softmax_forward(x.data<float>(), y.data<float>(), outer, D, inner, log);
      },
      [&](int index) {
        return ACCRUE_CUDA(softmax_forward)(index, ptr<float>(x), ptr<float>(y), outer, D, inner, log);
      });
}

void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx, std::int64_t outer, std::int64_t D,
                      std::int64_t inner, bool log, bool accumulate) {
  expect_tensors("softmax_backward", dx.device(), DType::f32, {&y, &dy, &dx});
  ACCRUE_ASSERT(y.numel() == outer * D * inner && dy.numel() == y.numel() && dx.numel() == y.numel());
  dx.bump_version();
  return dispatch(
      Op::softmax, dx.device(), dx.dtype(),
      [&] {
        return cpu::softmax_backward(y.data<float>(), dy.data<float>(), dx.data<float>(), outer, D, inner, log, accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(softmax_backward)(index, ptr<float>(y), ptr<float>(dy), ptr<float>(dx), outer, D,
                                      inner, log, accumulate);
      });
}

void masked_softmax_forward(const Tensor& x, const Tensor& mask, const Tensor& y, std::int64_t rows, std::int64_t D,
                            std::int64_t T_q, float scale, bool causal) {
  expect_tensors("masked_softmax_forward", y.device(), DType::f32, {&x, &y});
  if (mask.defined()) expect_tensors("masked_softmax_forward", y.device(), DType::f32, {&mask});
  ACCRUE_ASSERT(x.numel() == rows * D && y.numel() == x.numel() && T_q > 0 && rows % T_q == 0);
  ACCRUE_ASSERT(!mask.defined() || mask.numel() == T_q * D);
  y.bump_version();
  if (rows == 0 || D == 0) return;
  return dispatch(
      Op::masked_softmax, y.device(), y.dtype(),
      [&] {
        return cpu::masked_softmax_forward(x.data<float>(), host_data_or_null(mask), y.data<float>(), rows, D, T_q,
                                           scale, causal);
      },
      [&](int index) {
        return ACCRUE_CUDA(masked_softmax_forward)(index, ptr<float>(x), ptr_or_null(mask), ptr<float>(y), rows, D, T_q, scale,
                                            causal);
      });
}

void masked_softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx, std::int64_t rows, std::int64_t D,
                             float scale, bool accumulate) {
  expect_tensors("masked_softmax_backward", dx.device(), DType::f32, {&y, &dy, &dx});
  ACCRUE_ASSERT(y.numel() == rows * D && dy.numel() == y.numel() && dx.numel() == y.numel());
  dx.bump_version();
  if (rows == 0 || D == 0) return;
  return dispatch(
      Op::masked_softmax, dx.device(), dx.dtype(),
      [&] {
        return cpu::masked_softmax_backward(y.data<float>(), dy.data<float>(), dx.data<float>(), rows, D, scale,
                                            accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(masked_softmax_backward)(index, ptr<float>(y), ptr<float>(dy), ptr<float>(dx), rows, D, scale,
                                             accumulate);
      });
}

}  // namespace accrue::kernels
