// Views and copies: reshape, flatten, narrow, clone.

#include "accrue/framework/autograd.hpp"
#include "accrue/framework/ops.hpp"
#include "accrue/kernels/elementwise.hpp"

namespace accrue::ops {
namespace {

class ReshapeNode final : public Node {
 public:
  explicit ReshapeNode(const Shape& input) : input_(input) {}
  std::string_view name() const override { return "reshape"; }
  void backward(Tensor grad, GradSink& sink) override {
    Tensor view = grad.view_as_shape(input_);
    grad = Tensor();  // the view alone holds the buffer, so the sink can take it without a copy
    sink.add(0, std::move(view));
  }

 private:
  Shape input_;
};

class NarrowNode final : public Node {
 public:
  NarrowNode(std::int64_t begin, std::int64_t end) : begin_(begin), end_(end) {}
  std::string_view name() const override { return "narrow"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dx, accumulate] = sink.target(0);
    if (!accumulate) dx.zero_();
    const std::int64_t row = dx.rank() == 0 || dx.size(0) == 0 ? 0 : dx.numel() / dx.size(0);
    Tensor rows = dx.detach();
    rows.impl()->offset += begin_ * row;
    rows.impl()->shape[0] = end_ - begin_;
    kernels::add_into(rows, grad);
  }

 private:
  std::int64_t begin_, end_;
};

class CloneNode final : public Node {
 public:
  std::string_view name() const override { return "clone"; }
  void backward(Tensor grad, GradSink& sink) override { sink.add(0, std::move(grad)); }
};

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  ACCRUE_CHECK(x.defined(), "reshape: the input tensor is undefined");
  ACCRUE_CHECK_SHAPE(shape.numel() == x.numel(), "reshape: cannot view shape {} ({} elements) as {} ({} elements)",
                     x.shape(), x.numel(), shape, shape.numel());
  Tensor out = x.view_as_shape(shape);
  if (needs_grad({&x})) record(std::make_shared<ReshapeNode>(x.shape()), out, {&x});
  return out;
}

Tensor flatten(const Tensor& x, int start_dim) {
  ACCRUE_CHECK(x.defined(), "flatten: the input tensor is undefined");
  if (x.rank() == 0) return reshape(x, Shape{1});
  const int start = x.shape().normalize(start_dim);
  Shape s;
  std::int64_t folded = 1;
  for (int i = 0; i < x.rank(); ++i) {
    if (i < start) s.push_back(x.size(i));
    else folded *= x.size(i);
  }
  s.push_back(folded);
  return reshape(x, s);
}

Tensor narrow(const Tensor& x, std::int64_t begin, std::int64_t end) {
  ACCRUE_CHECK(x.defined(), "narrow: the input tensor is undefined");
  ACCRUE_CHECK_SHAPE(x.rank() >= 1, "narrow: needs at least one dimension, got shape {}", x.shape());
  ACCRUE_CHECK(0 <= begin && begin <= end && end <= x.size(0), "narrow: rows [{}, {}) are outside the {} rows of shape {}",
               begin, end, x.size(0), x.shape());
  Tensor out = x.detach();
  const std::int64_t row = x.size(0) == 0 ? 0 : x.numel() / x.size(0);
  out.impl()->offset += begin * row;
  out.impl()->shape[0] = end - begin;
  if (needs_grad({&x})) record(std::make_shared<NarrowNode>(begin, end), out, {&x});
  return out;
}

Tensor clone(const Tensor& x) {
  ACCRUE_CHECK(x.defined(), "clone: the input tensor is undefined");
  Tensor out = Tensor::empty(x.shape(), {.dtype = x.dtype(), .device = x.device()});
  kernels::copy(x, out);
  if (needs_grad({&x})) record(std::make_shared<CloneNode>(), out, {&x});
  return out;
}

}  // namespace accrue::ops
