#include "recompute.hpp"

#include <algorithm>

#include "../../framework/ops/autocast.hpp"
#include "../../framework/autograd/autograd.hpp"
#include "../../framework/core/memory.hpp"
#include "../../framework/core/random.hpp"

namespace accrue {
namespace {

Tensor chain(std::span<Layer* const> layers, const Tensor& x) {
  Tensor y = x;
  for (Layer* l : layers) y = l->forward(y);
  return y;
}

// The generator at a state for its scope, then back where it was.
class GeneratorAt {
 public:
  GeneratorAt(Generator& generator, std::uint64_t seed, std::uint64_t offset)
      : generator_(generator), seed_(generator.seed()), offset_(generator.offset()) {
    generator.set_state(seed, offset);
  }
  ~GeneratorAt() { generator_.set_state(seed_, offset_); }
  GeneratorAt(const GeneratorAt&) = delete;
  GeneratorAt& operator=(const GeneratorAt&) = delete;

 private:
  Generator& generator_;
  std::uint64_t seed_, offset_;
};

// Takes the gradient that reaches the recomputed segment's input, which stays a temporary (a leaf's
// would count as a parameter's gradient).
class InputGradient final : public Node {
 public:
  std::string_view name() const override { return "recompute input"; }
  void backward(Tensor grad_output, GradSink&) override { grad = std::move(grad_output); }
  Tensor grad;
};

// The segment's one node: its input kept, everything the first pass drew on remembered, and the
// segment run again inside backward.
class RecomputeNode final : public Node {
 public:
  RecomputeNode(std::span<Layer* const> layers, const Tensor& x)
      : layers_(layers.begin(), layers.end()),
        input_(x),
        generator_(&layers.front()->generator()),
        seed_(generator_->seed()),
        offset_(generator_->offset()),
        autocast_(Autocast::dtype()) {}
  std::string_view name() const override { return "recompute"; }

  void backward(Tensor grad_output, GradSink& sink) override {
    Tensor x = input_.get(name()).detach();
    const auto input_gradient = std::make_shared<InputGradient>();
    if (sink.needs(0)) record(input_gradient, x, {});
    Tensor y;
    {
      const GradModeGuard recording{true};
      const AutocastGuard autocast{autocast_};
      const ReplayScope replay;
      const GeneratorAt draws{*generator_, seed_, offset_};  // the first pass's random draws
      y = chain(layers_, x);
    }
    {
      // The parameters' gradients go straight into their .grad(); the outer pass reports them
      // ready once this node is done, as for any node.
      const PauseLeafObservation pause;
      run_backward(y, grad_output, /*retain_graph=*/false);
    }
    if (sink.needs(0) && input_gradient->grad.defined()) sink.add(0, std::move(input_gradient->grad));
  }
  void release() override { input_.reset(); }

 private:
  std::vector<Layer*> layers_;
  SavedTensor input_;
  Generator* generator_;
  std::uint64_t seed_, offset_;
  std::optional<DType> autocast_;
};

}  // namespace

Tensor forward_recomputed(std::span<Layer* const> layers, const Tensor& x) {
  ACCRUE_CHECK(!layers.empty(), "recomputation needs at least one layer");
  std::vector<const Tensor*> inputs{&x};
  for (Layer* l : layers)
    for (const auto& [name, p] : l->named_parameters()) inputs.push_back(&p);
  if (!needs_grad(inputs)) return chain(layers, x);
  auto node = std::make_shared<RecomputeNode>(layers, x);
  Tensor y;
  {
    const NoGradGuard no_grad;
    y = chain(layers, x);
  }
  if (y.impl() == x.impl()) y = y.detach();  // layers that hand their input back: the node gets its own tensor
  record(node, y, inputs);
  return y;
}

std::string RecomputePolicy::str() const {
  switch (mode) {
    case Mode::none: return "none";
    case Mode::types: {
      std::string s;
      for (const std::string& t : types) s += (s.empty() ? "" : ", ") + t;
      return s + " layers";
    }
    case Mode::every: return layers > 0 ? fmt::format("every {} layers", layers) : "sqrt(n) segments";
    case Mode::larger_than: return fmt::format("layers keeping over {} per sample", format_bytes(bytes));
  }
  return "?";
}

namespace layers {

Shape Recompute::build(const Shape& input_shape, Generator& generator) { return build_inner(input_shape, generator); }

Tensor Recompute::forward(const Tensor& x) {
  const std::vector<Layer*> inner = inner_layers();
  if (!training()) return chain(inner, x);
  return forward_recomputed(inner, x);
}

// Only the input is kept. The recomputed forward's activations live through the segment's
// backward; it takes the forward's scratch, then the backward of each inner layer with the
// gradients between them; the recomputed output, when no layer keeps it, lives all along too.
LayerMemoryUse Recompute::memory_use(const LayerMemoryQuery& q) const {
  const ChainMemory inner = chain_memory(given_layers(), q);
  LayerMemoryUse u = inner.use;
  u.keeps_input = true;
  u.keeps_output = false;
  u.kept_other = 0;
  u.kept_released_early = 0;
  u.recomputed = inner.use.kept_other;
  u.backward_scratch = u.input_gradient_scratch = std::max(inner.use.forward_scratch, inner.inner_backward) +
                                                  (inner.last_keeps_output ? 0 : inner.output_bytes);
  return u;
}

std::string Recompute::to_onnx(onnx::Graph& g, const std::string& x) const { return inner_to_onnx(g, x); }

}  // namespace layers
}  // namespace accrue
