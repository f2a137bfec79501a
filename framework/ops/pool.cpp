// 2-D max and average pooling, in the input's type where the kernels take it (bfloat16 on the CPU,
// as PyTorch's autocast leaves pooling in the input's type); otherwise in float32.

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../../kernels/dispatch.hpp"
#include "../../kernels/pool.hpp"

namespace accrue::ops {
namespace {

class Pool2dNode final : public Node {
 public:
  Pool2dNode(const Tensor& x, const Tensor& y, const kernels::Window2d& g, kernels::PoolMode mode)
      : x_(x), y_(y), g_(g), mode_(mode) {}
  std::string_view name() const override { return mode_ == kernels::PoolMode::max ? "max_pool2d" : "avg_pool2d"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dx, accumulate] = sink.target(0);
    kernels::pool2d_backward(x_.get(name()), y_.get(name()), grad, dx, g_, mode_, accumulate);
  }
  void release() override {
    x_.reset();
    y_.reset();
  }

 private:
  SavedTensor x_, y_;
  kernels::Window2d g_;
  kernels::PoolMode mode_;
};

Tensor pool2d(const Tensor& x_in, const Pool2dOptions& o, kernels::PoolMode mode) {
  const char* name = mode == kernels::PoolMode::max ? "max_pool2d" : "avg_pool2d";
  ACCRUE_CHECK(x_in.defined() && is_floating(x_in.dtype()), "{}: expects a floating-point tensor", name);
  ACCRUE_CHECK_SHAPE(x_in.rank() == 4, "{}: expects input (N, C, H, W), got shape {}", name, x_in.shape());
  const Size2 stride = o.stride.value_or(o.kernel);
  ACCRUE_CHECK(o.kernel.h >= 1 && o.kernel.w >= 1 && stride.h >= 1 && stride.w >= 1,
               "{}: kernel and stride must be positive, got kernel {} and stride {}", name, o.kernel.str(), stride.str());
  ACCRUE_CHECK(o.padding.h >= 0 && o.padding.w >= 0 && 2 * o.padding.h <= o.kernel.h && 2 * o.padding.w <= o.kernel.w,
               "{}: padding must be at most half the kernel (as in PyTorch), got padding {} for kernel {}", name,
               o.padding.str(), o.kernel.str());
  const Tensor x = pool2d_keeps_dtype(x_in.device(), x_in.dtype()) ? x_in : float32(x_in);
  kernels::Window2d g{.N = x.size(0), .C = x.size(1), .H = x.size(2), .W = x.size(3), .R = o.kernel.h, .S = o.kernel.w,
                      .stride_h = stride.h, .stride_w = stride.w, .pad_h = o.padding.h, .pad_w = o.padding.w};
  ACCRUE_CHECK_SHAPE(g.P() > 0 && g.Q() > 0, "{}: input of shape {} is smaller than the {} window with padding {}", name,
                     x.shape(), o.kernel.str(), o.padding.str());
  Tensor y = Tensor::empty({g.N, g.C, g.P(), g.Q()}, {.dtype = x.dtype(), .device = x.device()});
  kernels::pool2d_forward(x, y, g, mode);
  if (needs_grad({&x})) record(std::make_shared<Pool2dNode>(x, y, g, mode), y, {&x});
  return y;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options) { return pool2d(x, options, kernels::PoolMode::max); }

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options) {
  return pool2d(x, options,
                options.count_include_pad ? kernels::PoolMode::average_include_pad : kernels::PoolMode::average_exclude_pad);
}

bool pool2d_keeps_dtype(Device device, DType x_type) { return kernels::supports(kernels::Op::pool2d, device, x_type); }

Size2 pool2d_output_size(Size2 image, const Pool2dOptions& o) {
  const Size2 stride = o.stride.value_or(o.kernel);
  return {kernels::window_output_size(image.h, o.kernel.h, stride.h, o.padding.h, 1),
          kernels::window_output_size(image.w, o.kernel.w, stride.w, o.padding.w, 1)};
}

}  // namespace accrue::ops
