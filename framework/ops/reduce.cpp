// Sums and means over all elements or one dimension.

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "dim_split.hpp"
#include "../../kernels/reduce.hpp"

namespace accrue::ops {
namespace {

class SumNode final : public Node {
 public:
  SumNode(DimSplit split, float scale, bool mean) : split_(split), scale_(scale), mean_(mean) {}
  std::string_view name() const override { return mean_ ? "mean" : "sum"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dx, accumulate] = sink.target(0);
    kernels::expand_dim(grad, split_.outer, split_.D, split_.inner, scale_, dx, accumulate);
  }

 private:
  DimSplit split_;
  float scale_;
  bool mean_;
};

Tensor reduce(const Tensor& x_in, int dim, bool keepdim, bool all, bool mean) {
  const char* name = mean ? "mean" : "sum";
  ACCRUE_CHECK(x_in.defined() && is_floating(x_in.dtype()), "{}: expects a floating-point tensor", name);
  const Tensor x = float32(x_in);
  DimSplit split;
  Shape out_shape;
  if (all) {
    split.D = x.numel();
  } else {
    const int d = x.shape().normalize(dim);
    split = split_at(x.shape(), d);
    for (int i = 0; i < x.rank(); ++i) {
      if (i != d) out_shape.push_back(x.size(i));
      else if (keepdim) out_shape.push_back(1);
    }
  }
  ACCRUE_CHECK(!(mean && split.D == 0), "mean over an empty dimension of a tensor of shape {}", x.shape());
  const float scale = mean ? 1.0f / static_cast<float>(split.D) : 1.0f;
  Tensor out = Tensor::empty(out_shape, {.device = x.device()});
  kernels::sum_dim(x, split.outer, split.D, split.inner, scale, out, false);
  if (needs_grad({&x})) record(std::make_shared<SumNode>(split, scale, mean), out, {&x});
  return out;
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce(x, 0, false, true, false); }
Tensor sum(const Tensor& x, int dim, bool keepdim) { return reduce(x, dim, keepdim, false, false); }
Tensor mean(const Tensor& x) { return reduce(x, 0, false, true, true); }
Tensor mean(const Tensor& x, int dim, bool keepdim) { return reduce(x, dim, keepdim, false, true); }

}  // namespace accrue::ops
