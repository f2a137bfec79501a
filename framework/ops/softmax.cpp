// Softmax and log-softmax along one dimension; attention's scaled, causal or masked softmax.

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "dim_split.hpp"
#include "../../kernels/softmax.hpp"

namespace accrue::ops {
namespace {

class SoftmaxNode final : public Node {
 public:
  SoftmaxNode(const Tensor& y, DimSplit split, bool log) : y_(y), split_(split), log_(log) {}
  std::string_view name() const override { return log_ ? "log_softmax" : "softmax"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dx, accumulate] = sink.target(0);
    kernels::softmax_backward(y_.get(name()), grad, dx, split_.outer, split_.D, split_.inner, log_, accumulate);
  }
  void release() override { y_.reset(); }

 private:
  SavedTensor y_;
  DimSplit split_;
  bool log_;
};

Tensor softmax_impl(const Tensor& x_in, int dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  ACCRUE_CHECK(x_in.defined() && is_floating(x_in.dtype()), "{}: expects a floating-point tensor", name);
  const Tensor x = float32(x_in);
  ACCRUE_CHECK_SHAPE(x.rank() >= 1, "{}: needs at least one dimension, got shape {}", name, x.shape());
  const int d = x.shape().normalize(dim);
  const DimSplit split = split_at(x.shape(), d);
  Tensor y = Tensor::empty(x.shape(), {.device = x.device()});
  if (split.D > 0) kernels::softmax_forward(x, y, split.outer, split.D, split.inner, log);
  if (needs_grad({&x})) record(std::make_shared<SoftmaxNode>(y, split, log), y, {&x});
  return y;
}

class MaskedSoftmaxNode final : public Node {
 public:
  MaskedSoftmaxNode(const Tensor& y, std::int64_t rows, std::int64_t D, float scale)
      : y_(y), rows_(rows), D_(D), scale_(scale) {}
  std::string_view name() const override { return "masked_softmax"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dx, accumulate] = sink.target(0);
    kernels::masked_softmax_backward(y_.get(name()), float32(grad), dx, rows_, D_, scale_, accumulate);
  }
  void release() override { y_.reset(); }

 private:
  SavedTensor y_;
  std::int64_t rows_, D_;
  float scale_;
};

}  // namespace

Tensor masked_softmax(const Tensor& scores, const MaskedSoftmaxOptions& options) {
  ACCRUE_CHECK(scores.defined() && is_floating(scores.dtype()), "masked_softmax: expects a floating-point tensor");
  const Tensor x = float32(scores);
  ACCRUE_CHECK_SHAPE(x.rank() >= 2, "masked_softmax: scores must be (..., T_q, T_k), got shape {}", x.shape());
  const std::int64_t T_q = x.size(-2), D = x.size(-1), rows = D == 0 ? 0 : x.numel() / D;
  const Tensor& mask = options.mask;
  if (mask.defined()) {
    ACCRUE_CHECK(mask.dtype() == DType::f32 && mask.device() == x.device(),
                 "masked_softmax: the mask must be float32 on {}, got {} on {}", x.device().str(), dtype_name(mask.dtype()),
                 mask.device().str());
    ACCRUE_CHECK_SHAPE(mask.rank() == 2 && mask.size(0) == T_q && mask.size(1) == D,
                       "masked_softmax: the mask must be (T_q, T_k) = ({}, {}), got {}", T_q, D, mask.shape());
  }
  Tensor y = Tensor::empty(x.shape(), {.device = x.device()});
  if (T_q > 0) kernels::masked_softmax_forward(x, mask, y, rows, D, T_q, options.scale, options.causal);
  if (needs_grad({&x})) record(std::make_shared<MaskedSoftmaxNode>(y, rows, D, options.scale), y, {&x});
  return y;
}

Tensor softmax(const Tensor& x, int dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int dim) { return softmax_impl(x, dim, true); }

}  // namespace accrue::ops
