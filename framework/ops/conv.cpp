// 2-D convolution. Under bfloat16 autocast (or with a bfloat16 input) on a CPU with a bfloat16
// kernel it multiplies in bfloat16 with float32 accumulation, as PyTorch's autocast does: the
// output and its gradient are bfloat16, the weight's gradient float32. Otherwise it computes in
// float32, converting a low-precision input (cuDNN's bfloat16 forms are not wired in).

#include "autocast.hpp"
#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../../kernels/conv.hpp"
#include "../../kernels/gemm.hpp"

namespace accrue::ops {
namespace {

class Conv2dNode final : public Node {
 public:
  Conv2dNode(const Tensor& x, const Tensor& weight, bool has_bias, const kernels::Window2d& g)
      : g_(g), has_bias_(has_bias) {
    // x is needed only for the weight's gradient, the weight only for x's.
    if (weight.requires_grad()) x_ = SavedTensor{x};
    if (x.requires_grad()) weight_ = SavedTensor{weight};
  }
  std::string_view name() const override { return "conv2d"; }
  // grad has the output's type: float32, or bfloat16 for the bfloat16 kernels.
  void backward(Tensor grad, GradSink& sink) override {
    if (sink.needs(0)) {
      auto [dx, accumulate] = sink.target(0);
      kernels::conv2d_backward_data(grad, weight_.get(name()), dx, g_, accumulate);
    }
    if (sink.needs(1)) {
      auto [dw, accumulate] = sink.target(1);
      kernels::conv2d_backward_filter(grad, x_.get(name()), dw, g_, accumulate);
    }
    if (has_bias_ && sink.needs(2)) {
      auto [db, accumulate] = sink.target(2);
      kernels::conv2d_backward_bias(grad, db, g_, accumulate);
    }
  }
  void release() override {
    x_.reset();
    weight_.reset();
  }

 private:
  kernels::Window2d g_;
  bool has_bias_;
  SavedTensor x_, weight_;
};

// The kernels' geometry of a convolution of `batch` samples (C, H, W) with `filters` kernels.
kernels::Window2d window(std::int64_t batch, const Shape& sample, std::int64_t filters, Size2 kernel,
                         const Conv2dOptions& o) {
  return {.N = batch, .C = sample[0], .H = sample[1], .W = sample[2], .R = kernel.h, .S = kernel.w,
          .stride_h = o.stride.h, .stride_w = o.stride.w, .pad_h = o.padding.h, .pad_w = o.padding.w,
          .dilation_h = o.dilation.h, .dilation_w = o.dilation.w, .K = filters, .groups = o.groups};
}

}  // namespace

Tensor conv2d(const Tensor& x_in, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  ACCRUE_CHECK(x_in.defined() && weight.defined(), "conv2d: the input or the weight is undefined");
  ACCRUE_CHECK(is_floating(x_in.dtype()), "conv2d: expects a floating-point input, got {}", dtype_name(x_in.dtype()));
  ACCRUE_CHECK_SHAPE(x_in.rank() == 4, "conv2d: expects input (N, C, H, W), got shape {}", x_in.shape());
  ACCRUE_CHECK_SHAPE(weight.rank() == 4, "conv2d: expects weight (K, C / groups, R, S), got shape {}", weight.shape());
  ACCRUE_CHECK(o.groups >= 1, "conv2d: groups must be at least 1, got {}", o.groups);
  ACCRUE_CHECK(o.stride.h >= 1 && o.stride.w >= 1 && o.dilation.h >= 1 && o.dilation.w >= 1 && o.padding.h >= 0 &&
                   o.padding.w >= 0,
               "conv2d: stride and dilation must be positive and padding non-negative, got stride {}, padding {}, "
               "dilation {}",
               o.stride.str(), o.padding.str(), o.dilation.str());
  ACCRUE_CHECK(weight.dtype() == DType::f32, "conv2d: expects a float32 weight, got {}", dtype_name(weight.dtype()));
  const bool bf16 = conv2d_computes_bf16(x_in.device(), x_in.dtype(), Autocast::dtype());
  const Tensor x = bf16 && x_in.dtype() == DType::bf16 ? x_in : float32(x_in);
  const kernels::Window2d g = window(x.size(0), Shape{x.size(1), x.size(2), x.size(3)}, weight.size(0),
                                     {weight.size(2), weight.size(3)}, o);
  ACCRUE_CHECK_SHAPE(g.C % g.groups == 0 && g.K % g.groups == 0,
                     "conv2d: {} input channels and {} filters must both divide into {} groups", g.C, g.K, g.groups);
  ACCRUE_CHECK_SHAPE(weight.size(1) * g.groups == g.C,
                     "conv2d: input of shape {} has {} channels, the weight {} expects {} ({} per group x {} groups)",
                     x.shape(), g.C, weight.shape(), weight.size(1) * g.groups, weight.size(1), g.groups);
  ACCRUE_CHECK_SHAPE(g.P() > 0 && g.Q() > 0,
                     "conv2d: input of shape {} is smaller than the {}x{} kernel (dilation {}) with padding {}: "
                     "no output position",
                     x.shape(), g.R, g.S, o.dilation.str(), o.padding.str());
  if (bias.defined())
    ACCRUE_CHECK_SHAPE(bias.rank() == 1 && bias.size(0) == g.K, "conv2d: bias of shape {} for {} filters",
                       bias.shape(), g.K);
  ACCRUE_CHECK(x.device() == weight.device() && (!bias.defined() || bias.device() == weight.device()),
               "conv2d: the input is on {} and the weight on {}", x.device().str(), weight.device().str());
  Tensor y = Tensor::empty({g.N, g.K, g.P(), g.Q()}, {.dtype = bf16 ? DType::bf16 : DType::f32, .device = x.device()});
  kernels::conv2d_forward(x, weight, bias, y, g);
  if (needs_grad({&x, &weight, &bias}))
    record(std::make_shared<Conv2dNode>(x, weight, bias.defined(), g), y, {&x, &weight, &bias});
  return y;
}

bool conv2d_computes_bf16(Device device, DType x_type, std::optional<DType> autocast) {
  return (autocast ? *autocast : x_type) == DType::bf16 && kernels::conv2d_runs_bf16(device);
}

Size2 conv2d_output_size(Size2 image, Size2 kernel, const Conv2dOptions& o) {
  return {kernels::window_output_size(image.h, kernel.h, o.stride.h, o.padding.h, o.dilation.h),
          kernels::window_output_size(image.w, kernel.w, o.stride.w, o.padding.w, o.dilation.w)};
}

OpScratch conv2d_scratch(Device device, std::optional<DType> bf16_x, std::int64_t batch, const Shape& sample,
                         std::int64_t filters, Size2 kernel, const Conv2dOptions& o) {
  const kernels::Window2d g = window(batch, sample, filters, kernel, o);
  if (!bf16_x) {
    const kernels::ConvWorkspace w = kernels::conv2d_workspace_bytes(device, g);
    return {.forward = w.forward, .backward = w.backward, .input_gradient = w.backward_data};
  }
  const kernels::ConvWorkspace w = kernels::conv2d_bf16_workspace_bytes(g, *bf16_x);
  return {.forward = w.forward, .backward = w.backward, .input_gradient = w.backward_data,
          .kept_forward = w.kept_forward, .kept_for_input_gradient = w.kept_for_input_gradient};
}

}  // namespace accrue::ops
