// Softmax and log-softmax along one dimension.

#include "accrue/framework/autograd.hpp"
#include "accrue/framework/ops.hpp"
#include "accrue/framework/ops/dim_split.hpp"
#include "accrue/kernels/softmax.hpp"

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

}  // namespace

Tensor softmax(const Tensor& x, int dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int dim) { return softmax_impl(x, dim, true); }

}  // namespace accrue::ops
