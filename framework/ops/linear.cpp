// Matrix products: matmul and the fused linear map of Dense layers.
//
// Backward writes straight into the gradient buffers with GEMM's beta: beta = 1 adds into a
// .grad() that already holds earlier micro-batches' gradients, so accumulation costs no extra pass.

#include "accrue/framework/autograd.hpp"
#include "accrue/framework/ops.hpp"
#include "accrue/kernels/gemm.hpp"
#include "accrue/kernels/reduce.hpp"

namespace accrue::ops {
namespace {

class MatmulNode final : public Node {
 public:
  MatmulNode(const Tensor& a, const Tensor& b) : a_(a), b_(b) {}
  std::string_view name() const override { return "matmul"; }
  void backward(Tensor grad, GradSink& sink) override {
    if (sink.needs(0)) {  // da = dy b^T
      auto [da, accumulate] = sink.target(0);
      kernels::gemm(false, true, 1.0f, grad, b_.get(name()), accumulate ? 1.0f : 0.0f, da);
    }
    if (sink.needs(1)) {  // db = a^T dy
      auto [db, accumulate] = sink.target(1);
      kernels::gemm(true, false, 1.0f, a_.get(name()), grad, accumulate ? 1.0f : 0.0f, db);
    }
  }
  void release() override {
    a_.reset();
    b_.reset();
  }

 private:
  SavedTensor a_, b_;
};

// x (rows, in) as the leading dimensions of x folded together; y (rows, out).
class LinearNode final : public Node {
 public:
  LinearNode(const Tensor& x, const Tensor& weight, bool has_bias) : has_bias_(has_bias) {
    // x is needed only for the weight's gradient, the weight only for x's.
    if (weight.requires_grad()) x_ = SavedTensor{x};
    if (x.requires_grad()) weight_ = SavedTensor{weight};
  }
  std::string_view name() const override { return "linear"; }
  void backward(Tensor grad, GradSink& sink) override {
    if (sink.needs(0)) {  // dx = dy W
      auto [dx, accumulate] = sink.target(0);
      kernels::gemm(false, false, 1.0f, grad, weight_.get(name()), accumulate ? 1.0f : 0.0f, dx);
    }
    if (sink.needs(1)) {  // dW = dy^T x
      auto [dw, accumulate] = sink.target(1);
      kernels::gemm(true, false, 1.0f, grad, x_.get(name()), accumulate ? 1.0f : 0.0f, dw);
    }
    if (has_bias_ && sink.needs(2)) {  // db = sum of dy over rows
      auto [db, accumulate] = sink.target(2);
      const std::int64_t out = grad.size(-1);
      kernels::sum_dim(grad, 1, grad.numel() / out, out, 1.0f, db, accumulate);
    }
  }
  void release() override {
    x_.reset();
    weight_.reset();
  }

 private:
  bool has_bias_;
  SavedTensor x_, weight_;
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  ACCRUE_CHECK(a.defined() && b.defined(), "matmul: an operand is undefined");
  ACCRUE_CHECK_SHAPE(a.rank() == 2 && b.rank() == 2 && a.size(1) == b.size(0),
                     "matmul: shapes {} and {} do not multiply (needs (M, K) and (K, N))", a.shape(), b.shape());
  Tensor out = Tensor::empty({a.size(0), b.size(1)}, {.device = a.device()});
  kernels::gemm(false, false, 1.0f, a, b, 0.0f, out);
  if (needs_grad({&a, &b})) record(std::make_shared<MatmulNode>(a, b), out, {&a, &b});
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  ACCRUE_CHECK(x.defined() && weight.defined(), "linear: the input or the weight is undefined");
  ACCRUE_CHECK_SHAPE(weight.rank() == 2, "linear: the weight must be (out_features, in_features), got {}", weight.shape());
  ACCRUE_CHECK_SHAPE(x.rank() >= 1 && x.size(-1) == weight.size(1),
                     "linear: input of shape {} has {} features in its last dimension, the weight {} expects {}",
                     x.shape(), x.rank() >= 1 ? x.size(-1) : 0, weight.shape(), weight.size(1));
  const std::int64_t out_features = weight.size(0);
  const bool has_bias = bias.defined();
  if (has_bias)
    ACCRUE_CHECK_SHAPE(bias.rank() == 1 && bias.size(0) == out_features,
                       "linear: bias of shape {} for {} output features", bias.shape(), out_features);
  Shape out_shape = x.shape();
  out_shape[-1] = out_features;
  Tensor out = Tensor::empty(out_shape, {.device = x.device()});
  const std::int64_t rows = out_features == 0 ? 0 : out.numel() / out_features;
  if (has_bias) kernels::expand_dim(bias, 1, rows, out_features, 1.0f, out, false);
  kernels::gemm(false, true, 1.0f, x, weight, has_bias ? 1.0f : 0.0f, out);
  if (needs_grad({&x, &weight, &bias})) record(std::make_shared<LinearNode>(x, weight, has_bias), out, {&x, &weight, &bias});
  return out;
}

}  // namespace accrue::ops
