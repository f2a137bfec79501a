// Dropout, and the ops without a gradient: argmax and one-hot.

#include "../autograd.hpp"
#include "../ops.hpp"
#include "../random.hpp"
#include "../../kernels/dropout.hpp"
#include "../../kernels/reduce.hpp"

namespace accrue::ops {
namespace {

class DropoutNode final : public Node {
 public:
  DropoutNode(float p, std::uint64_t seed, std::uint64_t offset) : p_(p), seed_(seed), offset_(offset) {}
  std::string_view name() const override { return "dropout"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dx, accumulate] = sink.target(0);
    kernels::dropout_backward(grad, dx, p_, seed_, offset_, accumulate);
  }

 private:
  float p_;
  std::uint64_t seed_, offset_;
};

}  // namespace

Tensor dropout(const Tensor& x, float p, bool training, Generator* generator) {
  ACCRUE_CHECK(x.defined() && is_floating(x.dtype()), "dropout: expects a floating-point tensor");
  ACCRUE_CHECK(p >= 0.0f && p < 1.0f, "dropout: the drop probability must be in [0, 1), got {}", p);
  if (!training || p == 0.0f) return x;
  Generator& gen = generator != nullptr ? *generator : default_generator();
  const std::uint64_t seed = gen.seed(), offset = gen.reserve(static_cast<std::uint64_t>(x.numel()));
  Tensor y = Tensor::empty(x.shape(), {.dtype = x.dtype(), .device = x.device()});
  kernels::dropout_forward(x, y, p, seed, offset);
  if (needs_grad({&x})) record(std::make_shared<DropoutNode>(p, seed, offset), y, {&x});
  return y;
}

Tensor argmax(const Tensor& x_in) {
  ACCRUE_CHECK(x_in.defined() && is_floating(x_in.dtype()), "argmax: expects a floating-point tensor");
  const Tensor x = float32(x_in);
  ACCRUE_CHECK_SHAPE(x.rank() == 2 && x.size(1) > 0, "argmax: expects (rows, classes) with classes > 0, got {}",
                     x.shape());
  Tensor out = Tensor::empty({x.size(0)}, {.dtype = DType::i32, .device = x.device()});
  kernels::argmax_rows(x, out);
  return out;
}

Tensor one_hot(const Tensor& labels, std::int64_t classes) {
  ACCRUE_CHECK(labels.defined() && labels.dtype() == DType::i32, "one_hot: expects int32 labels");
  ACCRUE_CHECK(classes > 0, "one_hot: needs a positive number of classes, got {}", classes);
  const std::vector<std::int32_t> y = labels.to_vector<std::int32_t>();
  std::vector<float> values(y.size() * static_cast<std::size_t>(classes), 0.0f);
  for (std::size_t i = 0; i < y.size(); ++i) {
    ACCRUE_CHECK(y[i] >= 0 && y[i] < classes, "one_hot: label {} at index {} is outside [0, {})", y[i], i, classes);
    values[i * static_cast<std::size_t>(classes) + static_cast<std::size_t>(y[i])] = 1.0f;
  }
  Shape s = labels.shape();
  s.push_back(classes);
  return Tensor::from(values, s, {.device = labels.device()});
}

}  // namespace accrue::ops
