#include "norm.hpp"

#include "cpu/norm.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/norm.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {
namespace {

void expect_optional(std::string_view kernel, Device device, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (t->defined()) expect_tensors(kernel, device, DType::f32, {t});
}

}  // namespace

void group_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y, const Tensor& mean,
                        const Tensor& rstd, const NormShape& s, float eps) {
  expect_tensors("group_norm_forward", y.device(), DType::f32, {&x, &y, &mean, &rstd});
  expect_optional("group_norm_forward", y.device(), {&gamma, &beta});
  ACCRUE_ASSERT(x.numel() == s.N * s.C * s.L && y.numel() == x.numel() && mean.numel() == s.N * s.groups &&
                s.C % s.groups == 0);
  for (const Tensor* t : {&y, &mean, &rstd}) t->bump_version();
  return dispatch(
      Op::group_norm, y.device(), y.dtype(),
      [&] {
        return cpu::group_norm_forward(x.data<float>(), host_data_or_null(gamma), host_data_or_null(beta), y.data<float>(),
                                       mean.data<float>(), rstd.data<float>(), s, eps);
      },
      [&](int index) {
        return ACCRUE_CUDA(group_norm_forward)(index, ptr<float>(x), ptr_or_null(gamma), ptr_or_null(beta),
                                        ptr<float>(y), ptr<float>(mean), ptr<float>(rstd), s.N, s.C, s.L, s.groups, eps);
      });
}

void group_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                         const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         const NormShape& s) {
  expect_tensors("group_norm_backward", dx.device(), DType::f32, {&x, &mean, &rstd, &dy, &dx});
  expect_optional("group_norm_backward", dx.device(), {&gamma, &dgamma, &dbeta});
  for (const Tensor* t : {&dx, &dgamma, &dbeta})
    if (t->defined()) t->bump_version();
  return dispatch(
      Op::group_norm, dx.device(), dx.dtype(),
      [&] {
        return cpu::group_norm_backward(x.data<float>(), host_data_or_null(gamma), mean.data<float>(), rstd.data<float>(),
                                        dy.data<float>(), dx.data<float>(), host_data_or_null(dgamma), host_data_or_null(dbeta), s);
      },
      [&](int index) {
        return ACCRUE_CUDA(group_norm_backward)(index, ptr<float>(x), ptr_or_null(gamma), ptr<float>(mean),
                                         ptr<float>(rstd), ptr<float>(dy), ptr<float>(dx), ptr_or_null(dgamma),
                                         ptr_or_null(dbeta), s.N, s.C, s.L, s.groups);
      });
}

void batch_norm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                                 const Tensor& mean, const Tensor& rstd, const Tensor& running_mean,
                                 const Tensor& running_var, const NormShape& s, float momentum, float eps) {
  expect_tensors("batch_norm_forward_training", y.device(), DType::f32, {&x, &y, &mean, &rstd});
  expect_optional("batch_norm_forward_training", y.device(), {&gamma, &beta, &running_mean, &running_var});
  ACCRUE_ASSERT(x.numel() == s.N * s.C * s.L && y.numel() == x.numel() && mean.numel() == s.C);
  for (const Tensor* t : {&y, &mean, &rstd, &running_mean, &running_var})
    if (t->defined()) t->bump_version();
  return dispatch(
      Op::batch_norm, y.device(), y.dtype(),
      [&] {
        return cpu::batch_norm_forward_training(x.data<float>(), host_data_or_null(gamma), host_data_or_null(beta), y.data<float>(),
                                                mean.data<float>(), rstd.data<float>(), host_data_or_null(running_mean),
                                                host_data_or_null(running_var), s, momentum, eps);
      },
      [&](int index) {
        // cuDNN needs a scale and a shift: ones and zeros stand in for a layer without them.
        const Tensor g = gamma.defined() ? gamma : Tensor::ones({s.C}, {.device = y.device()});
        const Tensor b = beta.defined() ? beta : Tensor::zeros({s.C}, {.device = y.device()});
        return ACCRUE_CUDA(batch_norm_forward_training)(index, ptr<float>(x), ptr<float>(g), ptr<float>(b),
                                                 ptr<float>(y), ptr<float>(mean), ptr<float>(rstd),
                                                 ptr_or_null(running_mean), ptr_or_null(running_var), s.N, s.C,
                                                 s.L, momentum, eps);
      });
}

void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                         const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         const NormShape& s, float eps) {
  expect_tensors("batch_norm_backward", dx.device(), DType::f32, {&x, &mean, &rstd, &dy, &dx});
  expect_optional("batch_norm_backward", dx.device(), {&gamma, &dgamma, &dbeta});
  for (const Tensor* t : {&dx, &dgamma, &dbeta})
    if (t->defined()) t->bump_version();
  return dispatch(
      Op::batch_norm, dx.device(), dx.dtype(),
      [&] {
        return cpu::batch_norm_backward(x.data<float>(), host_data_or_null(gamma), mean.data<float>(), rstd.data<float>(),
                                        dy.data<float>(), dx.data<float>(), host_data_or_null(dgamma), host_data_or_null(dbeta), s);
      },
      [&](int index) {
        const TensorOptions on{.device = dx.device()};
        const Tensor g = gamma.defined() ? gamma : Tensor::ones({s.C}, on);
        const Tensor dg = dgamma.defined() ? dgamma : Tensor::empty({s.C}, on);
        const Tensor db = dbeta.defined() ? dbeta : Tensor::empty({s.C}, on);
        return ACCRUE_CUDA(batch_norm_backward)(index, ptr<float>(x), ptr<float>(g), ptr<float>(mean),
                                         ptr<float>(rstd), ptr<float>(dy), ptr<float>(dx), ptr<float>(dg), ptr<float>(db),
                                         s.N, s.C, s.L, eps);
      });
}

void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y, const Tensor& mean,
                        const Tensor& rstd, std::int64_t rows, std::int64_t features, float eps) {
  group_norm_forward(x, gamma, beta, y, mean, rstd, {.N = rows, .C = features, .L = 1, .groups = 1}, eps);
}

void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                         const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         std::int64_t rows, std::int64_t features) {
  group_norm_backward(x, gamma, mean, rstd, dy, dx, dgamma, dbeta, {.N = rows, .C = features, .L = 1, .groups = 1});
}

}  // namespace accrue::kernels
