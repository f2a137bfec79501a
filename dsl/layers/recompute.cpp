#include "accrue/dsl/layers/recompute.hpp"

#include <algorithm>

#include "accrue/dsl/layers/residual.hpp"  // chain_memory_use
#include "accrue/dsl/onnx.hpp"
#include "accrue/framework/autocast.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/memory.hpp"
#include "accrue/framework/random.hpp"

namespace accrue {
namespace {

Tensor chain(std::span<Layer* const> layers, const Tensor& x) {
  Tensor y = x;
  for (Layer* l : layers) y = l->forward(y);
  return y;
}

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
      const EnableGradGuard recording;
      const AutocastGuard autocast{autocast_};
      const ReplayScope replay;
      // The same random draws as the first pass, then the generator where the run left it.
      const std::uint64_t seed = generator_->seed(), offset = generator_->offset();
      generator_->set_state(seed_, offset_);
      try {
        y = chain(layers_, x);
      } catch (...) {
        generator_->set_state(seed, offset);
        throw;
      }
      generator_->set_state(seed, offset);
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

Recompute::Recompute(std::vector<std::unique_ptr<Layer>> inner) {
  for (std::size_t i = 0; i < inner.size(); ++i) add_child(std::to_string(i), std::move(inner[i]));
}

std::vector<const Layer*> Recompute::given_layers() const {
  std::vector<const Layer*> inner;
  for (std::size_t i = 0; i < child_count(); ++i) inner.push_back(&child(i));
  return inner;
}

Shape Recompute::build(const Shape& input_shape, Generator& generator) {
  Shape shape = input_shape;
  for (std::size_t i = 0; i < child_count(); ++i) shape = build_child(i, shape, generator);
  return shape;
}

Tensor Recompute::forward(const Tensor& x) {
  std::vector<Layer*> inner;
  for (std::size_t i = 0; i < child_count(); ++i) inner.push_back(&child(i));
  if (!training()) return chain(inner, x);
  return forward_recomputed(inner, x);
}

// Only the input is kept; the inner layers' activations live during the segment's backward, with
// the recomputed output.
LayerMemoryUse Recompute::memory_use(const LayerMemoryQuery& q) const {
  const LayerMemoryUse inner = chain_memory_use(given_layers(), q);
  LayerMemoryUse u = inner;
  u.keeps_input = true;
  u.keeps_output = false;
  u.kept_other = 0;
  u.kept_released_early = 0;
  // The recomputed forward's activations, alive through the segment's backward; its scratch, then
  // the backward of each inner layer: the gradients between them (the segment's own input and
  // output gradients the plan counts for it) and the layer's scratch.
  u.recomputed = inner.kept_other;
  std::size_t backward = 0;
  const std::vector<const Layer*> chain = given_layers();
  LayerMemoryQuery at = q;
  bool last_keeps_output = false;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const LayerMemoryUse l = chain[i]->memory_use(at);
    last_keeps_output = l.keeps_output || l.output_is_view;
    const std::size_t out = at.bytes(chain[i]->output_shape(), l.output_dtype);
    backward = std::max(backward, l.scratch_with_input_gradient() + (i > 0 ? at.input_bytes() : 0) +
                                      (i + 1 < chain.size() ? out : 0));
    at.input_shape = chain[i]->output_shape();
    at.input_dtype = l.output_dtype;
  }
  u.backward_scratch = u.input_gradient_scratch = std::max(inner.forward_scratch, backward);
  // The recomputed output, when no layer keeps it, lives through the segment's backward all the same.
  if (!last_keeps_output) {
    u.backward_scratch += at.input_bytes();
    u.input_gradient_scratch += at.input_bytes();
  }
  return u;
}

std::string Recompute::to_onnx(onnx::Graph& g, const std::string& x) const {
  std::string y = x;
  for (std::size_t i = 0; i < child_count(); ++i) y = g.layer(child(i), y);
  return y;
}

}  // namespace layers
}  // namespace accrue
