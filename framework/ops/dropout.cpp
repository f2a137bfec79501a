// Dropout: a mask drawn by Philox at the generator's seed and offset (the same on every backend),
// which backward draws again instead of keeping it.

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../core/random.hpp"
#include "../../kernels/dropout.hpp"

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

}  // namespace accrue::ops
