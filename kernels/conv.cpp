#include "accrue/kernels/conv.hpp"

#include "accrue/config.hpp"
#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {
namespace {

Tensor cpu_scratch(std::int64_t floats) {
  return Tensor::empty({floats}, {.category = MemoryCategory::temporaries});
}

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Window2d& g) {
  expect_tensors("conv2d_forward", y.device(), DType::f32, {&x, &w, &y});
  if (bias.defined()) expect_tensors("conv2d_forward", y.device(), DType::f32, {&bias});
  ACCRUE_ASSERT(x.numel() == g.N * g.C * g.H * g.W && y.numel() == g.N * g.K * g.P() * g.Q() &&
                w.numel() == g.K * g.patch_size());
  y.bump_version();
  if (y.device().is_cpu()) {
    const Tensor workspace = cpu_scratch(cpu::conv2d_workspace_floats(g));
    return cpu::conv2d_forward(x.data<float>(), w.data<float>(), host_data_or_null(bias), y.data<float>(), g,
                               workspace.data<float>());
  }
#if ACCRUE_WITH_CUDA
  if (y.device().is_cuda())
    return cuda::conv2d_forward(y.device().index(), ptr<float>(x), ptr<float>(w),
                                ptr_or_null(bias), ptr<float>(y), g);
#endif
  unsupported_device("conv2d_forward", y.device());
}

void conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx, const Window2d& g, bool accumulate) {
  expect_tensors("conv2d_backward_data", dx.device(), DType::f32, {&dy, &w, &dx});
  ACCRUE_ASSERT(dx.numel() == g.N * g.C * g.H * g.W && dy.numel() == g.N * g.K * g.P() * g.Q());
  dx.bump_version();
  if (dx.device().is_cpu()) {
    const Tensor workspace = cpu_scratch(cpu::conv2d_workspace_floats(g));
    return cpu::conv2d_backward_data(dy.data<float>(), w.data<float>(), dx.data<float>(), g, accumulate,
                                     workspace.data<float>());
  }
#if ACCRUE_WITH_CUDA
  if (dx.device().is_cuda())
    return cuda::conv2d_backward_data(dx.device().index(), ptr<float>(dy), ptr<float>(w), ptr<float>(dx), g,
                                      accumulate);
#endif
  unsupported_device("conv2d_backward_data", dx.device());
}

void conv2d_backward_filter(const Tensor& dy, const Tensor& x, const Tensor& dw, const Window2d& g, bool accumulate) {
  expect_tensors("conv2d_backward_filter", dw.device(), DType::f32, {&dy, &x, &dw});
  ACCRUE_ASSERT(dw.numel() == g.K * g.patch_size() && x.numel() == g.N * g.C * g.H * g.W);
  dw.bump_version();
  if (dw.device().is_cpu()) {
    const Tensor workspace = cpu_scratch(cpu::conv2d_workspace_floats(g));
    const Tensor partials = cpu_scratch(cpu::conv2d_partial_floats(g));
    return cpu::conv2d_backward_filter(dy.data<float>(), x.data<float>(), dw.data<float>(), g, accumulate,
                                       workspace.data<float>(), partials.data<float>());
  }
#if ACCRUE_WITH_CUDA
  if (dw.device().is_cuda())
    return cuda::conv2d_backward_filter(dw.device().index(), ptr<float>(dy), ptr<float>(x), ptr<float>(dw), g,
                                        accumulate);
#endif
  unsupported_device("conv2d_backward_filter", dw.device());
}

void conv2d_backward_bias(const Tensor& dy, const Tensor& db, const Window2d& g, bool accumulate) {
  expect_tensors("conv2d_backward_bias", db.device(), DType::f32, {&dy, &db});
  ACCRUE_ASSERT(db.numel() == g.K);
  db.bump_version();
  if (db.device().is_cpu()) return cpu::conv2d_backward_bias(dy.data<float>(), db.data<float>(), g, accumulate);
#if ACCRUE_WITH_CUDA
  if (db.device().is_cuda())
    return cuda::conv2d_backward_bias(db.device().index(), ptr<float>(dy), ptr<float>(db), g, accumulate);
#endif
  unsupported_device("conv2d_backward_bias", db.device());
}

}  // namespace accrue::kernels
