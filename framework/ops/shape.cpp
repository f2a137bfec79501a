// Views and copies: reshape, flatten, narrow, clone, permute and transpose; rows picked by index
// (embedding).

#include "accrue/framework/autograd.hpp"
#include "accrue/framework/ops.hpp"
#include "accrue/kernels/elementwise.hpp"
#include "accrue/kernels/gather.hpp"
#include "accrue/kernels/permute.hpp"

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

// The gradient of a permute is its output's gradient permuted back by the inverse order.
class PermuteNode final : public Node {
 public:
  explicit PermuteNode(std::vector<int> inverse) : inverse_(std::move(inverse)) {}
  std::string_view name() const override { return "permute"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dx, accumulate] = sink.target(0);
    kernels::permute(grad, dx, inverse_, accumulate);
  }

 private:
  std::vector<int> inverse_;
};

class EmbeddingNode final : public Node {
 public:
  EmbeddingNode(const Tensor& indices, std::int64_t padding_idx) : indices_(indices), padding_idx_(padding_idx) {}
  std::string_view name() const override { return "embedding"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dw, accumulate] = sink.target(0);
    if (!accumulate) dw.zero_();
    kernels::scatter_add_rows(float32(grad), indices_.get(name()), dw, padding_idx_);
  }
  void release() override { indices_.reset(); }

 private:
  SavedTensor indices_;
  std::int64_t padding_idx_;
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

Tensor permute(const Tensor& x, std::span<const int> dims) {
  ACCRUE_CHECK(x.defined(), "permute: the input tensor is undefined");
  const int rank = x.rank();
  ACCRUE_CHECK_SHAPE(static_cast<int>(dims.size()) == rank, "permute: {} dimensions given for shape {} of rank {}",
                     dims.size(), x.shape(), rank);
  std::vector<int> order(dims.size()), inverse(dims.size(), -1);
  Shape shape;
  for (int d = 0; d < rank; ++d) {
    const int from = x.shape().normalize(dims[static_cast<std::size_t>(d)]);
    ACCRUE_CHECK_SHAPE(inverse[static_cast<std::size_t>(from)] < 0, "permute: dimension {} is named twice in the order for shape {}",
                       from, x.shape());
    order[static_cast<std::size_t>(d)] = from;
    inverse[static_cast<std::size_t>(from)] = d;
    shape.push_back(x.size(from));
  }
  Tensor out = Tensor::empty(shape, {.dtype = x.dtype(), .device = x.device()});
  kernels::permute(x, out, order);
  if (needs_grad({&x})) record(std::make_shared<PermuteNode>(std::move(inverse)), out, {&x});
  return out;
}

Tensor permute(const Tensor& x, std::initializer_list<int> dims) {
  return permute(x, std::span<const int>{dims.begin(), dims.size()});
}

Tensor transpose(const Tensor& x, int dim0, int dim1) {
  ACCRUE_CHECK(x.defined(), "transpose: the input tensor is undefined");
  std::vector<int> order(static_cast<std::size_t>(x.rank()));
  for (int d = 0; d < x.rank(); ++d) order[static_cast<std::size_t>(d)] = d;
  std::swap(order.at(static_cast<std::size_t>(x.shape().normalize(dim0))),
            order.at(static_cast<std::size_t>(x.shape().normalize(dim1))));
  return permute(x, order);
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::int64_t padding_idx) {
  ACCRUE_CHECK(weight.defined() && indices.defined(), "embedding: the weight or the indices are undefined");
  ACCRUE_CHECK_SHAPE(weight.rank() == 2, "embedding: the weight must be (num_embeddings, embedding_dim), got {}",
                     weight.shape());
  ACCRUE_CHECK(indices.dtype() == DType::i32, "embedding: indices must be int32, got {}", dtype_name(indices.dtype()));
  ACCRUE_CHECK(padding_idx >= -1 && padding_idx < weight.size(0), "embedding: padding_idx {} is outside [0, {}) (or -1 for none)",
               padding_idx, weight.size(0));
  Shape shape = indices.shape();
  shape.push_back(weight.size(1));
  Tensor out = Tensor::empty(shape, {.dtype = weight.dtype(), .device = weight.device()});
  kernels::gather_rows(weight, indices, out);
  if (needs_grad({&weight})) record(std::make_shared<EmbeddingNode>(indices, padding_idx), out, {&weight});
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
