// Matrix products: matmul, bmm and the fused linear map of Dense layers.
//
// Under autocast (or with low-precision inputs) both multiply in float16 or bfloat16 with float32
// accumulation.
//
// Backward writes straight into the gradient buffers with GEMM's beta: beta = 1 adds into a
// .grad() that already holds earlier micro-batches' gradients, so accumulation costs no extra pass.

#include <algorithm>

#include "autocast.hpp"
#include "../autograd/autograd.hpp"
#include "../autograd/deferred_gradients.hpp"
#include "ops.hpp"
#include "../../kernels/cast.hpp"
#include "../../kernels/gemm.hpp"
#include "../../kernels/reduce.hpp"

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
    // dW = dy^T x, now or, accumulating, once per window (DeferredWeightGradients).
    if (sink.needs(1) && !DeferredWeightGradients::take(edges[1], x_.get(name()), grad, sink, 1)) {
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

// The low-precision multiply of autocast: operands in float16 or bfloat16, float32 accumulation,
// the result rounded once to the low-precision type. What backward needs is kept in low precision
// (half the memory); weight and bias gradients are computed in float32 straight into the float32
// master gradients, so accumulating micro-batches loses nothing to rounding.
class LowPrecisionLinearNode final : public Node {
 public:
  LowPrecisionLinearNode(const Tensor& x, const Tensor& w, bool keep_x, bool keep_w, DType low, bool has_bias,
                         bool transpose_w)
      : low_(low), has_bias_(has_bias), transpose_w_(transpose_w) {
    // Saved as they are: the GEMMs round float32 ones (the master weight, a float32 input) to the low
    // type again in backward, exactly as in forward, so no low-precision copy of a weight is kept.
    if (keep_x) x_ = SavedTensor{x};
    if (keep_w) w_ = SavedTensor{w};
  }
  std::string_view name() const override { return transpose_w_ ? "linear" : "matmul"; }
  void backward(Tensor grad, GradSink& sink) override {
    if (sink.needs(0)) {  // dx = dy W (linear) or dy b^T (matmul), in x's dtype
      auto [dx, accumulate] = sink.target(0);
      kernels::gemm(false, !transpose_w_, 1.0f, grad, w_.get(name()), accumulate ? 1.0f : 0.0f, dx, low_);
    }
    if (sink.needs(1)) {  // dW = dy^T x (linear) or x^T dy (matmul), float32
      auto [dw, accumulate] = sink.target(1);
      if (transpose_w_)
        kernels::gemm(true, false, 1.0f, grad, x_.get(name()), accumulate ? 1.0f : 0.0f, dw, low_);
      else
        kernels::gemm(true, false, 1.0f, x_.get(name()), grad, accumulate ? 1.0f : 0.0f, dw, low_);
    }
    if (has_bias_ && sink.needs(2)) {
      auto [db, accumulate] = sink.target(2);
      const std::int64_t out = grad.size(-1);
      kernels::sum_dim(grad, 1, grad.numel() / out, out, 1.0f, db, accumulate);
    }
  }
  void release() override {
    x_.reset();
    w_.reset();
  }

 private:
  DType low_;
  bool has_bias_, transpose_w_;
  SavedTensor x_, w_;
};

// C = op(A) op(B) for each matrix of a batch; `compute` float32 or the autocast type.
class BmmNode final : public Node {
 public:
  BmmNode(const Tensor& a, const Tensor& b, BmmOptions options, std::int64_t batch, DType compute)
      : a_(a), b_(b), options_(options), batch_(batch), compute_(compute) {}
  std::string_view name() const override { return "bmm"; }
  void backward(Tensor grad, GradSink& sink) override {
    const bool ta = options_.transpose_a, tb = options_.transpose_b;
    if (sink.needs(0)) {  // dA = dC op(B)^T, or op(B) dC^T when A is read transposed
      auto [da, accumulate] = sink.target(0);
      if (!ta) kernels::gemm_batched(false, !tb, 1.0f, grad, b_.get(name()), accumulate ? 1.0f : 0.0f, da, batch_, compute_);
      else kernels::gemm_batched(tb, true, 1.0f, b_.get(name()), grad, accumulate ? 1.0f : 0.0f, da, batch_, compute_);
    }
    if (sink.needs(1)) {  // dB = op(A)^T dC, or dC^T op(A) when B is read transposed
      auto [db, accumulate] = sink.target(1);
      if (!tb) kernels::gemm_batched(!ta, false, 1.0f, a_.get(name()), grad, accumulate ? 1.0f : 0.0f, db, batch_, compute_);
      else kernels::gemm_batched(true, ta, 1.0f, grad, a_.get(name()), accumulate ? 1.0f : 0.0f, db, batch_, compute_);
    }
  }
  void release() override {
    a_.reset();
    b_.reset();
  }

 private:
  SavedTensor a_, b_;
  BmmOptions options_;
  std::int64_t batch_;
  DType compute_;
};

// The low-precision type a multiply of a and b runs in, or nothing for float32.
std::optional<DType> multiply_dtype(const Tensor& a, const Tensor& b) {
  if (const auto autocast = Autocast::dtype()) return autocast;
  if (is_low_precision(a.dtype())) return a.dtype();
  if (is_low_precision(b.dtype())) return b.dtype();
  return std::nullopt;
}

// x as the multiply reads it: float32 or `dtype` as it is; any other type (float16 under bfloat16
// autocast) converted to float32 first.
Tensor float32_or(const Tensor& x, DType dtype) {
  if (x.dtype() == DType::f32 || x.dtype() == dtype) return x;
  Tensor out = Tensor::empty(x.shape(), {.device = x.device()});
  kernels::cast(x, out);
  return out;
}

// y = x W^T + b (transpose_w) or y = x W, computed in `dtype`.
Tensor multiply_low_precision(const Tensor& x, const Tensor& w, const Tensor& bias, DType dtype, bool transpose_w,
                              const Shape& out_shape) {
  Tensor y = Tensor::empty(out_shape, {.dtype = dtype, .device = x.device()});
  if (transpose_w)
    kernels::linear(float32_or(x, dtype), float32_or(w, dtype), bias, y, dtype);
  else  // matmul: no bias, one rounding into y
    kernels::gemm(false, false, 1.0f, float32_or(x, dtype), float32_or(w, dtype), 0.0f, y, dtype);
  if (needs_grad({&x, &w, &bias}))
    record(std::make_shared<LowPrecisionLinearNode>(float32_or(x, dtype), float32_or(w, dtype), w.requires_grad(),
                                                    x.requires_grad(), dtype, bias.defined(), transpose_w),
           y, {&x, &w, &bias});
  return y;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  ACCRUE_CHECK(a.defined() && b.defined(), "matmul: an operand is undefined");
  ACCRUE_CHECK_SHAPE(a.rank() == 2 && b.rank() == 2 && a.size(1) == b.size(0),
                     "matmul: shapes {} and {} do not multiply (needs (M, K) and (K, N))", a.shape(), b.shape());
  if (const auto low = multiply_dtype(a, b)) return multiply_low_precision(a, b, Tensor(), *low, false, {a.size(0), b.size(1)});
  Tensor out = Tensor::empty({a.size(0), b.size(1)}, {.device = a.device()});
  kernels::gemm(false, false, 1.0f, a, b, 0.0f, out);
  if (needs_grad({&a, &b})) record(std::make_shared<MatmulNode>(a, b), out, {&a, &b});
  return out;
}

Tensor bmm(const Tensor& a_in, const Tensor& b_in, BmmOptions options) {
  ACCRUE_CHECK(a_in.defined() && b_in.defined(), "bmm: an operand is undefined");
  const Shape& sa = a_in.shape();
  const Shape& sb = b_in.shape();
  bool leading_equal = sa.rank() == sb.rank() && sa.rank() >= 3;
  for (int d = 0; leading_equal && d + 2 < sa.rank(); ++d) leading_equal = sa[d] == sb[d];
  ACCRUE_CHECK_SHAPE(leading_equal, "bmm: shapes {} and {} need the same leading dimensions and rank 3 or more", sa, sb);
  const std::int64_t M = options.transpose_a ? sa[-1] : sa[-2], K = options.transpose_a ? sa[-2] : sa[-1];
  const std::int64_t Kb = options.transpose_b ? sb[-1] : sb[-2], N = options.transpose_b ? sb[-2] : sb[-1];
  ACCRUE_CHECK_SHAPE(K == Kb, "bmm: {}{} and {}{} do not multiply: ({}, {}) by ({}, {})", sa,
                     options.transpose_a ? " read transposed" : "", sb, options.transpose_b ? " read transposed" : "", M, K,
                     Kb, N);
  Shape out_shape = sa;
  out_shape[-2] = M;
  out_shape[-1] = N;
  std::int64_t batch = 1;
  for (int d = 0; d + 2 < sa.rank(); ++d) batch *= sa[d];
  const DType compute = multiply_dtype(a_in, b_in).value_or(DType::f32);
  const Tensor a = float32_or(a_in, compute), b = float32_or(b_in, compute);
  Tensor out = Tensor::empty(out_shape, {.dtype = compute, .device = a.device()});
  kernels::gemm_batched(options.transpose_a, options.transpose_b, 1.0f, a, b, 0.0f, out, batch, compute);
  // The graph runs to the operands as given; backward multiplies the converted ones it saved.
  if (needs_grad({&a_in, &b_in}))
    record(std::make_shared<BmmNode>(a, b, options, batch, compute), out, {&a_in, &b_in});
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
  if (const auto low = multiply_dtype(x, weight)) return multiply_low_precision(x, weight, bias, *low, true, out_shape);
  Tensor out = Tensor::empty(out_shape, {.device = x.device()});
  kernels::linear(x, weight, bias, out, DType::f32);
  if (needs_grad({&x, &weight, &bias})) record(std::make_shared<LinearNode>(x, weight, has_bias), out, {&x, &weight, &bias});
  return out;
}

OpScratch linear_scratch(Device device, DType compute, DType x_type, std::int64_t rows, std::int64_t in,
                         std::int64_t out, bool weight_kept) {
  const auto gemm = [&](std::int64_t M, std::int64_t N, std::int64_t K, DType a, DType b, DType c, bool b_weight) {
    return kernels::gemm_workspace_bytes(device, compute, M, N, K, a, b, c, b_weight && weight_kept);
  };
  // Forward y = x W^T (on a GPU into a float32 accumulator); backward dW = dy^T x, and before it
  // dx = dy W when the input needs its gradient.
  return {.forward = (device.is_cpu() ? 0 : static_cast<std::size_t>(rows * out) * dtype_size(DType::f32)) +
                     gemm(rows, out, in, x_type, DType::f32, compute, true),
          .backward = gemm(out, in, rows, compute, x_type, DType::f32, false),
          .input_gradient = gemm(rows, in, out, compute, DType::f32, x_type, true),
          // x W^T reads W as an in x out operand; dy W as an out x in one.
          .kept_forward = kernels::gemm_kept_parameter_bytes(device, compute, in, out),
          .kept_for_input_gradient = kernels::gemm_kept_parameter_bytes(device, compute, out, in, true)};
}

}  // namespace accrue::ops
