#include "conv.hpp"

#include "cpu/conv.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/conv.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {
namespace {

Tensor cpu_scratch(std::int64_t floats) {
  return Tensor::empty({floats}, {.category = MemoryCategory::temporaries});
}

}  // namespace

bool conv2d_runs_bf16(Device device) {
  return supports(Op::conv2d, device, DType::bf16) && cpu::bf16_kernel() != cpu::Bf16Kernel::none;
}

namespace {

std::byte* bytes_of(const Tensor& t) { return static_cast<std::byte*>(t.data_ptr()); }

Tensor cpu_scratch_bytes(std::size_t bytes) { return cpu_scratch(static_cast<std::int64_t>((bytes + 3) / 4)); }

// The bfloat16 kernels' preconditions: `low` bfloat16, `any` float32 or bfloat16, `f32` (the
// weight, its gradients) float32, all on `device`.
void expect_bf16(std::string_view kernel, Device device, std::initializer_list<const Tensor*> low,
                 std::initializer_list<const Tensor*> any, std::initializer_list<const Tensor*> f32) {
  ACCRUE_CHECK(!device.is_cpu() || conv2d_runs_bf16(device),
               "{}: bfloat16 convolution on the CPU needs AMX or AVX-512 BF16, which this processor lacks", kernel);
  expect_tensors(kernel, device, DType::bf16, low);
  expect_tensors(kernel, device, DType::f32, f32);
  for (const Tensor* t : any)
    if (t->dtype() != DType::f32) expect_tensors(kernel, device, DType::bf16, {t});
}

// The CUDA side of a bfloat16 convolution, which dispatch refuses before it could run.
void no_cuda_bf16(int) { ACCRUE_ASSERT(false); }

std::uint16_t* bf16_data(const Tensor& t) { return static_cast<std::uint16_t*>(t.data_ptr()); }

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Window2d& g) {
  if (y.dtype() == DType::bf16) {
    expect_bf16("conv2d_forward", y.device(), {&y}, {&x}, {&w});
    if (bias.defined()) expect_tensors("conv2d_forward", y.device(), DType::f32, {&bias});
    ACCRUE_ASSERT(x.numel() == g.N * g.C * g.H * g.W && y.numel() == g.N * g.K * g.P() * g.Q());
    y.bump_version();
    return dispatch(
        Op::conv2d, y.device(), DType::bf16,
        [&] {
          const Tensor workspace = cpu_scratch_bytes(cpu::conv2d_bf16_workspace_bytes(g, x.dtype()).forward);
          const auto w_param = cpu::parameter_operand(w);
          cpu::conv2d_forward_bf16(x.data_ptr(), x.dtype(), w.data<float>(), w_param ? &*w_param : nullptr,
                                   host_data_or_null(bias), bf16_data(y), g, bytes_of(workspace));
        },
        no_cuda_bf16);
  }
  expect_tensors("conv2d_forward", y.device(), DType::f32, {&x, &w, &y});
  if (bias.defined()) expect_tensors("conv2d_forward", y.device(), DType::f32, {&bias});
  ACCRUE_ASSERT(x.numel() == g.N * g.C * g.H * g.W && y.numel() == g.N * g.K * g.P() * g.Q() &&
                w.numel() == g.K * g.patch_size());
  y.bump_version();
  return dispatch(
      Op::conv2d, y.device(), y.dtype(),
      [&] {
        const Tensor workspace = cpu_scratch_bytes(cpu::conv2d_workspace_bytes(g).forward);
        return cpu::conv2d_forward(x.data<float>(), w.data<float>(), host_data_or_null(bias), y.data<float>(), g,
                                   bytes_of(workspace));
      },
      [&](int index) {
        return ACCRUE_CUDA(conv2d_forward)(index, ptr<float>(x), ptr<float>(w),
                                    ptr_or_null(bias), ptr<float>(y), g);
      });
}

void conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx, const Window2d& g, bool accumulate) {
  if (dy.dtype() == DType::bf16) {
    expect_bf16("conv2d_backward_data", dx.device(), {&dy}, {&dx}, {&w});
    ACCRUE_ASSERT(dx.numel() == g.N * g.C * g.H * g.W && dy.numel() == g.N * g.K * g.P() * g.Q());
    dx.bump_version();
    return dispatch(
        Op::conv2d, dx.device(), DType::bf16,
        [&] {
          const Tensor workspace = cpu_scratch_bytes(cpu::conv2d_bf16_workspace_bytes(g, dx.dtype()).backward_data);
          const auto w_param = cpu::parameter_operand(w);
          cpu::conv2d_backward_data_bf16(bf16_data(dy), w.data<float>(), w_param ? &*w_param : nullptr, dx.data_ptr(),
                                         dx.dtype(), g, accumulate, bytes_of(workspace));
        },
        no_cuda_bf16);
  }
  expect_tensors("conv2d_backward_data", dx.device(), DType::f32, {&dy, &w, &dx});
  ACCRUE_ASSERT(dx.numel() == g.N * g.C * g.H * g.W && dy.numel() == g.N * g.K * g.P() * g.Q());
  dx.bump_version();
  return dispatch(
      Op::conv2d, dx.device(), dx.dtype(),
      [&] {
        const Tensor workspace = cpu_scratch_bytes(cpu::conv2d_workspace_bytes(g).backward_data);
        return cpu::conv2d_backward_data(dy.data<float>(), w.data<float>(), dx.data<float>(), g, accumulate,
                                         bytes_of(workspace));
      },
      [&](int index) {
        return ACCRUE_CUDA(conv2d_backward_data)(index, ptr<float>(dy), ptr<float>(w), ptr<float>(dx), g,
                                          accumulate);
      });
}

void conv2d_backward_filter(const Tensor& dy, const Tensor& x, const Tensor& dw, const Window2d& g, bool accumulate) {
  if (dy.dtype() == DType::bf16) {
    expect_bf16("conv2d_backward_filter", dw.device(), {&dy}, {&x}, {&dw});
    ACCRUE_ASSERT(dw.numel() == g.K * g.patch_size() && x.numel() == g.N * g.C * g.H * g.W);
    dw.bump_version();
    return dispatch(
        Op::conv2d, dw.device(), DType::bf16,
        [&] {
          const Tensor workspace = cpu_scratch_bytes(cpu::conv2d_bf16_workspace_bytes(g, x.dtype()).backward_filter);
          cpu::conv2d_backward_filter_bf16(bf16_data(dy), x.data_ptr(), x.dtype(), dw.data<float>(), g, accumulate,
                                           bytes_of(workspace));
        },
        no_cuda_bf16);
  }
  expect_tensors("conv2d_backward_filter", dw.device(), DType::f32, {&dy, &x, &dw});
  ACCRUE_ASSERT(dw.numel() == g.K * g.patch_size() && x.numel() == g.N * g.C * g.H * g.W);
  dw.bump_version();
  return dispatch(
      Op::conv2d, dw.device(), dw.dtype(),
      [&] {
        const Tensor workspace = cpu_scratch_bytes(cpu::conv2d_workspace_bytes(g).backward_filter);
        return cpu::conv2d_backward_filter(dy.data<float>(), x.data<float>(), dw.data<float>(), g, accumulate,
                                           bytes_of(workspace));
      },
      [&](int index) {
        return ACCRUE_CUDA(conv2d_backward_filter)(index, ptr<float>(dy), ptr<float>(x), ptr<float>(dw), g,
                                            accumulate);
      });
}

void conv2d_backward_bias(const Tensor& dy, const Tensor& db, const Window2d& g, bool accumulate) {
  if (dy.dtype() == DType::bf16) {
    expect_bf16("conv2d_backward_bias", db.device(), {&dy}, {}, {&db});
    ACCRUE_ASSERT(db.numel() == g.K);
    db.bump_version();
    return dispatch(
        Op::conv2d, db.device(), DType::bf16,
        [&] { cpu::conv2d_backward_bias_bf16(bf16_data(dy), db.data<float>(), g, accumulate); }, no_cuda_bf16);
  }
  expect_tensors("conv2d_backward_bias", db.device(), DType::f32, {&dy, &db});
  ACCRUE_ASSERT(db.numel() == g.K);
  db.bump_version();
  return dispatch(
      Op::conv2d, db.device(), db.dtype(),
      [&] {
        return cpu::conv2d_backward_bias(dy.data<float>(), db.data<float>(), g, accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(conv2d_backward_bias)(index, ptr<float>(dy), ptr<float>(db), g, accumulate);
      });
}

ConvWorkspace conv2d_bf16_workspace_bytes(const Window2d& g, DType x_type) {
  const cpu::ConvWorkspaceBytes w = cpu::conv2d_bf16_workspace_bytes(g, x_type);
  return {.forward = w.forward + w.forward_packs, .backward = w.backward_filter,
          .backward_data = w.backward_data + w.backward_data_packs, .kept_forward = w.kept_forward,
          .kept_for_input_gradient = w.kept_backward_data};
}

ConvWorkspace conv2d_workspace_bytes(Device device, const Window2d& g) {
  if (!device.is_cpu()) return {};
  const cpu::ConvWorkspaceBytes w = cpu::conv2d_workspace_bytes(g);
  return {.forward = w.forward, .backward = w.backward_filter, .backward_data = w.backward_data};
}

}  // namespace accrue::kernels
