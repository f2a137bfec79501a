#include "accrue/kernels/conv.hpp"

#include "accrue/kernels/cpu/conv.hpp"
#include "accrue/kernels/cuda/conv.hpp"
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
  return dispatch(
      Op::conv2d, y.device(), y.dtype(),
      [&] {
        const Tensor workspace = cpu_scratch(cpu::conv2d_workspace_floats(g));
        return cpu::conv2d_forward(x.data<float>(), w.data<float>(), host_data_or_null(bias), y.data<float>(), g,
                                   workspace.data<float>());
      },
      [&](int index) {
        return cuda::conv2d_forward(index, ptr<float>(x), ptr<float>(w),
                                    ptr_or_null(bias), ptr<float>(y), g);
      });
}

void conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx, const Window2d& g, bool accumulate) {
  expect_tensors("conv2d_backward_data", dx.device(), DType::f32, {&dy, &w, &dx});
  ACCRUE_ASSERT(dx.numel() == g.N * g.C * g.H * g.W && dy.numel() == g.N * g.K * g.P() * g.Q());
  dx.bump_version();
  return dispatch(
      Op::conv2d, dx.device(), dx.dtype(),
      [&] {
        const Tensor workspace = cpu_scratch(cpu::conv2d_workspace_floats(g));
        return cpu::conv2d_backward_data(dy.data<float>(), w.data<float>(), dx.data<float>(), g, accumulate,
                                         workspace.data<float>());
      },
      [&](int index) {
        return cuda::conv2d_backward_data(index, ptr<float>(dy), ptr<float>(w), ptr<float>(dx), g,
                                          accumulate);
      });
}

void conv2d_backward_filter(const Tensor& dy, const Tensor& x, const Tensor& dw, const Window2d& g, bool accumulate) {
  expect_tensors("conv2d_backward_filter", dw.device(), DType::f32, {&dy, &x, &dw});
  ACCRUE_ASSERT(dw.numel() == g.K * g.patch_size() && x.numel() == g.N * g.C * g.H * g.W);
  dw.bump_version();
  return dispatch(
      Op::conv2d, dw.device(), dw.dtype(),
      [&] {
        const Tensor workspace = cpu_scratch(cpu::conv2d_workspace_floats(g));
        const Tensor partials = cpu_scratch(cpu::conv2d_partial_floats(g));
        return cpu::conv2d_backward_filter(dy.data<float>(), x.data<float>(), dw.data<float>(), g, accumulate,
                                           workspace.data<float>(), partials.data<float>());
      },
      [&](int index) {
        return cuda::conv2d_backward_filter(index, ptr<float>(dy), ptr<float>(x), ptr<float>(dw), g,
                                            accumulate);
      });
}

void conv2d_backward_bias(const Tensor& dy, const Tensor& db, const Window2d& g, bool accumulate) {
  expect_tensors("conv2d_backward_bias", db.device(), DType::f32, {&dy, &db});
  ACCRUE_ASSERT(db.numel() == g.K);
  db.bump_version();
  return dispatch(
      Op::conv2d, db.device(), db.dtype(),
      [&] {
        return cpu::conv2d_backward_bias(dy.data<float>(), db.data<float>(), g, accumulate);
      },
      [&](int index) {
        return cuda::conv2d_backward_bias(index, ptr<float>(dy), ptr<float>(db), g, accumulate);
      });
}

ConvWorkspace conv2d_workspace_bytes(Device device, const Window2d& g) {
  if (!device.is_cpu()) return {};
  const std::size_t workspace = static_cast<std::size_t>(cpu::conv2d_workspace_floats(g)) * sizeof(float);
  return {.forward = workspace,
          .backward = workspace + static_cast<std::size_t>(cpu::conv2d_partial_floats(g)) * sizeof(float)};
}

}  // namespace accrue::kernels
