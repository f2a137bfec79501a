// Views and copies: reshape, flatten, narrow, clone, permute and transpose, slice, split and cat;
// rows picked by index (embedding).

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "dim_split.hpp"
#include "../../kernels/concat.hpp"
#include "../../kernels/elementwise.hpp"
#include "../../kernels/gather.hpp"
#include "../../kernels/permute.hpp"

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

// x's gradient is zero but for the block its slice's gradient goes back to.
class SliceNode final : public Node {
 public:
  SliceNode(DimSplit x, std::int64_t begin, std::int64_t end) : x_(x), begin_(begin), end_(end) {}
  std::string_view name() const override { return "slice"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dx, accumulate] = sink.target(0);
    if (!accumulate) dx.zero_();
    const std::int64_t width = (end_ - begin_) * x_.inner;
    kernels::copy_columns(grad, width, 0, dx, x_.D * x_.inner, begin_ * x_.inner, x_.outer, width, true);
  }

 private:
  DimSplit x_;
  std::int64_t begin_, end_;
};

// Each input's gradient is its block of the output's.
class CatNode final : public Node {
 public:
  CatNode(std::int64_t outer, std::int64_t out_cols, std::vector<std::int64_t> widths)
      : outer_(outer), out_cols_(out_cols), widths_(std::move(widths)) {}
  std::string_view name() const override { return "cat"; }
  void backward(Tensor grad, GradSink& sink) override {
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < widths_.size(); offset += widths_[i], ++i) {
      if (!sink.needs(i)) continue;
      auto [dx, accumulate] = sink.target(i);
      kernels::copy_columns(grad, out_cols_, offset, dx, widths_[i], 0, outer_, widths_[i], accumulate);
    }
  }

 private:
  std::int64_t outer_, out_cols_;
  std::vector<std::int64_t> widths_;
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

Tensor slice(const Tensor& x, int dim, std::int64_t begin, std::int64_t end) {
  ACCRUE_CHECK(x.defined(), "slice: the input tensor is undefined");
  ACCRUE_CHECK_SHAPE(x.rank() >= 1, "slice: needs at least one dimension, got shape {}", x.shape());
  const int d = x.shape().normalize(dim);
  ACCRUE_CHECK_SHAPE(0 <= begin && begin <= end && end <= x.size(d),
                     "slice: [{}, {}) is outside the {} entries of dimension {} of shape {}", begin, end, x.size(d), d,
                     x.shape());
  const DimSplit a = split_at(x.shape(), d);
  Shape shape = x.shape();
  shape[d] = end - begin;
  Tensor out = Tensor::empty(shape, {.dtype = x.dtype(), .device = x.device()});
  const std::int64_t width = (end - begin) * a.inner;
  kernels::copy_columns(x, a.D * a.inner, begin * a.inner, out, width, 0, a.outer, width);
  if (needs_grad({&x})) record(std::make_shared<SliceNode>(a, begin, end), out, {&x});
  return out;
}

std::vector<Tensor> split(const Tensor& x, std::span<const std::int64_t> sizes, int dim) {
  ACCRUE_CHECK(x.defined(), "split: the input tensor is undefined");
  const int d = x.shape().normalize(dim);
  std::int64_t total = 0;
  for (const std::int64_t s : sizes) {
    ACCRUE_CHECK_SHAPE(s >= 0, "split: a negative size {}", s);
    total += s;
  }
  ACCRUE_CHECK_SHAPE(total == x.size(d), "split: sizes adding up to {} for the {} entries of dimension {} of shape {}",
                     total, x.size(d), d, x.shape());
  std::vector<Tensor> pieces;
  std::int64_t begin = 0;
  for (const std::int64_t s : sizes) {
    pieces.push_back(slice(x, d, begin, begin + s));
    begin += s;
  }
  return pieces;
}

Tensor cat(std::span<const Tensor> xs, int dim) {
  ACCRUE_CHECK(!xs.empty(), "cat: no tensors to concatenate");
  const Tensor& first = xs.front();
  ACCRUE_CHECK(first.defined(), "cat: tensor 0 is undefined");
  const int d = first.shape().normalize(dim);
  Shape shape = first.shape();
  shape[d] = 0;
  std::vector<std::int64_t> widths;
  std::vector<const Tensor*> inputs;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    ACCRUE_CHECK(x.defined(), "cat: tensor {} is undefined", i);
    ACCRUE_CHECK(x.dtype() == first.dtype() && x.device() == first.device(),
                 "cat: tensor {} is {} on {}, tensor 0 {} on {}", i, dtype_name(x.dtype()), x.device().str(),
                 dtype_name(first.dtype()), first.device().str());
    bool fits = x.rank() == first.rank();
    for (int k = 0; fits && k < x.rank(); ++k) fits = k == d || x.size(k) == first.size(k);
    ACCRUE_CHECK_SHAPE(fits, "cat: tensor {} of shape {} does not match tensor 0's {} but along dimension {}", i,
                       x.shape(), first.shape(), d);
    shape[d] += x.size(d);
    const DimSplit piece = split_at(x.shape(), d);
    widths.push_back(piece.D * piece.inner);
    inputs.push_back(&x);
  }
  const DimSplit a = split_at(shape, d);
  const std::int64_t out_cols = a.D * a.inner;
  Tensor out = Tensor::empty(shape, {.dtype = first.dtype(), .device = first.device()});
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < xs.size(); offset += widths[i], ++i)
    kernels::copy_columns(xs[i], widths[i], 0, out, out_cols, offset, a.outer, widths[i]);
  if (needs_grad(inputs)) record(std::make_shared<CatNode>(a.outer, out_cols, std::move(widths)), out, inputs);
  return out;
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
