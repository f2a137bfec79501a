// Element-wise ops: functions of one tensor and broadcast functions of two.

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../../kernels/elementwise.hpp"
#include "../../kernels/reduce.hpp"

namespace accrue {
namespace ops {
namespace {

using kernels::BinaryOp;
using kernels::UnaryOp;
using kernels::UnaryParams;

void expect_float(const Tensor& x, std::string_view op) {
  ACCRUE_CHECK(x.defined(), "{}: the input tensor is undefined", op);
  ACCRUE_CHECK(is_floating(x.dtype()), "{}: expects a floating-point tensor, got {} of shape {}", op,
               dtype_name(x.dtype()), x.shape());
}

class UnaryNode final : public Node {
 public:
  UnaryNode(UnaryOp op, UnaryParams params, std::string_view name, const Tensor& x, const Tensor& y)
      : op_(op), params_(params), name_(name) {
    if (kernels::unary_grad_reads_input(op)) x_ = SavedTensor{x};
    if (kernels::unary_grad_reads_output(op)) y_ = SavedTensor{y};
  }
  std::string_view name() const override { return name_; }
  void backward(Tensor grad, GradSink& sink) override {
    // The kernel reads x or y, never both; the gradient stands in for the one not kept.
    const Tensor& x = kernels::unary_grad_reads_input(op_) ? x_.get(name_) : grad;
    const Tensor& y = kernels::unary_grad_reads_output(op_) ? y_.get(name_) : grad;
    auto [dx, accumulate] = sink.target(0);
    kernels::unary_backward(op_, params_, x, y, grad, dx, accumulate);
  }
  void release() override {
    x_.reset();
    y_.reset();
  }

 private:
  UnaryOp op_;
  UnaryParams params_;
  std::string_view name_;
  SavedTensor x_, y_;
};

// Element-wise functions keep their input's dtype (float16 and bfloat16 computed in float32).
Tensor unary(UnaryOp op, std::string_view name, const Tensor& x, UnaryParams params = {}) {
  expect_float(x, name);
  Tensor y = Tensor::empty(x.shape(), {.dtype = x.dtype(), .device = x.device()});
  kernels::unary_forward(op, params, x, y);
  if (needs_grad({&x})) record(std::make_shared<UnaryNode>(op, params, name, x, y), y, {&x});
  return y;
}

// add and sub: the gradient of each operand is dy itself (negated for sub's b), summed over any
// broadcast dimensions, so nothing is saved.
class AddSubNode final : public Node {
 public:
  AddSubNode(bool subtract, const Shape& out) : subtract_(subtract), out_(out) {}
  std::string_view name() const override { return subtract_ ? "sub" : "add"; }
  void backward(Tensor grad, GradSink& sink) override {
    for (std::size_t i = 0; i < 2; ++i) {
      if (!sink.needs(i)) continue;
      const float scale = (subtract_ && i == 1) ? -1.0f : 1.0f;
      if (edges[i].shape == out_ && scale == 1.0f) {
        // Passes straight through; the last user takes the buffer itself, without a copy.
        const bool last = i == 1 || !sink.needs(1);
        sink.add(i, last ? std::move(grad) : grad);
        continue;
      }
      auto [d, accumulate] = sink.target(i);
      kernels::sum_to_shape(grad, d, scale, accumulate);
    }
  }

 private:
  bool subtract_;
  Shape out_;
};

// A function of two tensors whose gradient reads both: mul, div, maximum, minimum.
class BinaryNode final : public Node {
 public:
  BinaryNode(BinaryOp op, std::string_view name, const Tensor& a, const Tensor& b) : op_(op), name_(name), a_(a), b_(b) {}
  std::string_view name() const override { return name_; }
  void backward(Tensor grad, GradSink& sink) override {
    const Tensor& a = a_.get(name());
    const Tensor& b = b_.get(name());
    for (int i = 0; i < 2; ++i) {
      if (!sink.needs(static_cast<std::size_t>(i))) continue;
      auto [d, accumulate] = sink.target(static_cast<std::size_t>(i));
      kernels::binary_backward(op_, a, b, grad, i, d, accumulate);
    }
  }
  void release() override {
    a_.reset();
    b_.reset();
  }

 private:
  BinaryOp op_;
  std::string_view name_;
  SavedTensor a_, b_;
};

// Functions of two tensors compute in float32; low-precision operands are converted first.
Tensor binary(BinaryOp op, std::string_view name, const Tensor& a_in, const Tensor& b_in) {
  expect_float(a_in, name);
  expect_float(b_in, name);
  const Tensor a = float32(a_in), b = float32(b_in);
  ACCRUE_CHECK(a.device() == b.device(), "{}: operands on {} and {}; move them to one device", name, a.device(),
               b.device());
  const Shape shape = kernels::broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, {.device = a.device()});
  kernels::binary_forward(op, a, b, out);
  if (needs_grad({&a, &b})) {
    std::shared_ptr<Node> node;
    if (op == BinaryOp::add || op == BinaryOp::sub)
      node = std::make_shared<AddSubNode>(op == BinaryOp::sub, shape);
    else
      node = std::make_shared<BinaryNode>(op, name, a, b);
    record(node, out, {&a, &b});
  }
  return out;
}

}  // namespace

Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, "relu", x); }
Tensor gelu(const Tensor& x, bool tanh_approximation) {
  return tanh_approximation ? unary(UnaryOp::gelu_tanh, "gelu", x) : unary(UnaryOp::gelu, "gelu", x);
}
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, "sigmoid", x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, "tanh", x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, "exp", x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::log, "log", x); }
Tensor neg(const Tensor& x) { return unary(UnaryOp::neg, "neg", x); }
Tensor square(const Tensor& x) { return unary(UnaryOp::square, "square", x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, "sqrt", x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::abs, "abs", x); }
Tensor pow(const Tensor& x, float exponent) { return unary(UnaryOp::pow, "pow", x, {exponent, 0.0f}); }
Tensor affine(const Tensor& x, float a, float b) { return unary(UnaryOp::affine, "affine", x, {a, b}); }
Tensor clamp(const Tensor& x, float low, float high) {
  ACCRUE_CHECK(low <= high, "clamp: low {} is above high {}", low, high);
  return unary(UnaryOp::clamp, "clamp", x, {low, high});
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, "add", a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::sub, "sub", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, "mul", a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, "div", a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::maximum, "maximum", a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::minimum, "minimum", a, b); }

}  // namespace ops

Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
Tensor operator-(const Tensor& x) { return ops::neg(x); }
Tensor operator+(const Tensor& a, float b) { return ops::affine(a, 1.0f, b); }
Tensor operator+(float a, const Tensor& b) { return ops::affine(b, 1.0f, a); }
Tensor operator-(const Tensor& a, float b) { return ops::affine(a, 1.0f, -b); }
Tensor operator-(float a, const Tensor& b) { return ops::affine(b, -1.0f, a); }
Tensor operator*(const Tensor& a, float b) { return ops::affine(a, b, 0.0f); }
Tensor operator*(float a, const Tensor& b) { return ops::affine(b, a, 0.0f); }
Tensor operator/(const Tensor& a, float b) {
  ACCRUE_CHECK(b != 0.0f, "division of a tensor of shape {} by the scalar 0", a.shape());
  return ops::affine(a, 1.0f / b, 0.0f);
}

}  // namespace accrue
