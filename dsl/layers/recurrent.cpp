#include "recurrent.hpp"
#include "../layer_registry.hpp"

#include <algorithm>
#include <cmath>

#include "../../framework/autograd/deferred_gradients.hpp"
#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

Recurrent::Recurrent(std::int64_t hidden, RecurrentOptions options, int gates)
    : hidden_(hidden), options_(std::move(options)), gates_(gates) {
  ACCRUE_CHECK(hidden > 0 && options_.layers >= 1, "a recurrent layer needs a positive hidden size and layers, got {} and {}",
               hidden, options_.layers);
  if (!options_.name.empty()) set_name(options_.name);
}

Shape Recurrent::build(const Shape& input_shape, Generator& generator) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 2 && input_shape[0] > 0,
                     "{} takes samples (T, features) with T > 0, got {}; put an Embedding before it for tokens",
                     type_name(), input_shape);
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden_));
  const TensorOptions param{.category = MemoryCategory::parameters};
  const std::int64_t rows = gates_ * hidden_;
  for (int k = 0; k < options_.layers; ++k) {
    const std::int64_t in = k == 0 ? input_shape[1] : hidden_;
    add_parameter(fmt::format("weight_ih_l{}", k), Tensor::uniform({rows, in}, -bound, bound, &generator, param));
    add_parameter(fmt::format("weight_hh_l{}", k), Tensor::uniform({rows, hidden_}, -bound, bound, &generator, param));
    if (options_.bias) {
      add_parameter(fmt::format("bias_ih_l{}", k), Tensor::uniform({rows}, -bound, bound, &generator, param));
      add_parameter(fmt::format("bias_hh_l{}", k), Tensor::uniform({rows}, -bound, bound, &generator, param));
    }
  }
  return options_.return_sequences ? Shape{input_shape[0], hidden_} : Shape{hidden_};
}

Tensor Recurrent::parameter(int k, int which) const {
  if (which >= 2 && !options_.bias) return Tensor();
  const std::size_t per_layer = options_.bias ? 4 : 2;
  return named_parameters().at(static_cast<std::size_t>(k) * per_layer + static_cast<std::size_t>(which)).second;
}

Tensor Recurrent::hidden_product(const Tensor& h, int k) const { return ops::linear(h, parameter(k, 1), parameter(k, 3)); }

// Layer by layer: every step's input projection in one product, then the steps in order.
Tensor Recurrent::forward(const Tensor& x) {
  const std::int64_t B = x.size(0), T = x.size(1);
  Tensor sequence = x;
  Tensor last;
  for (int k = 0; k < options_.layers; ++k) {
    const Tensor projected = ops::linear(sequence, parameter(k, 0), parameter(k, 2));
    const TensorOptions on{.device = x.device()};
    State state{Tensor::zeros({B, hidden_}, on), gates_ == 4 ? Tensor::zeros({B, hidden_}, on) : Tensor()};
    std::vector<Tensor> outputs;
    const bool keep_all = options_.return_sequences || k + 1 < options_.layers;
    for (std::int64_t t = 0; t < T; ++t) {
      state = step(ops::reshape(ops::slice(projected, 1, t, t + 1), {B, gates_ * hidden_}), state, k);
      if (keep_all) outputs.push_back(ops::reshape(state.h, {B, 1, hidden_}));
    }
    last = state.h;
    if (keep_all) sequence = ops::cat(outputs, 1);
  }
  return options_.return_sequences ? sequence : last;
}

// Every step keeps its gates' activations and three more hidden-sized tensors for backward (the
// LSTM's cell state, its tanh and the hidden state; the GRU's hidden product, h - n and the hidden
// state): (gates + 3) x hidden floats per step and sample in each layer. A layer above the first
// also keeps its input sequence.
LayerMemoryUse Recurrent::memory_use(const LayerMemoryQuery& q) const {
  const std::int64_t T = q.input_shape[0];
  const auto per_layer = static_cast<std::size_t>(q.batch * T * (gates_ + 3) * hidden_) * 4;
  const auto layer_input = static_cast<std::size_t>(q.batch * T * hidden_) * 4;
  const auto projections = static_cast<std::size_t>(q.batch * T * gates_ * hidden_) * 4;
  // WeightGradients::per_window: rows of every layer's input projection and of each step's hidden
  // product wait, in float32.
  std::size_t waiting = 0;
  if (!q.autocast)
    for (int k = 0; k < options_.layers; ++k)
      waiting += DeferredWeightGradients::buffer_bytes(q.device, q.batch * T, k == 0 ? q.input_shape[1] : hidden_,
                                                       gates_ * hidden_) +
                 DeferredWeightGradients::buffer_bytes(q.device, q.batch, hidden_, gates_ * hidden_);
  return {.output_dtype = DType::f32,
          .keeps_input = true,
          .keeps_output = false,
          .kept_other = per_layer * static_cast<std::size_t>(options_.layers) +
                        layer_input * static_cast<std::size_t>(options_.layers - 1),
          .forward_scratch = static_cast<std::size_t>(q.batch * gates_ * hidden_) * 8,
          // The gradient of every step's input projection, gathered in one buffer; the input's
          // gradient, which the plan counts beside it, is made from it and after it.
          .backward_scratch = projections - std::min(projections, q.input_bytes()),
          .deferred_gradient_rows = waiting};
}

Recurrent::State LSTM::step(const Tensor& projected_input, const State& state, int k) {
  const std::int64_t H = hidden();
  const Tensor gates = ops::add(projected_input, hidden_product(state.h, k));
  const std::int64_t sizes[] = {H, H, H, H};
  const std::vector<Tensor> g = ops::split(gates, sizes, 1);
  const Tensor c = ops::add(ops::mul(ops::sigmoid(g[1]), state.c), ops::mul(ops::sigmoid(g[0]), ops::tanh(g[2])));
  return {ops::mul(ops::sigmoid(g[3]), ops::tanh(c)), c};
}

Recurrent::State GRU::step(const Tensor& projected_input, const State& state, int k) {
  const std::int64_t H = hidden();
  const std::int64_t sizes[] = {H, H, H};
  const std::vector<Tensor> xi = ops::split(projected_input, sizes, 1);
  const std::vector<Tensor> hh = ops::split(hidden_product(state.h, k), sizes, 1);
  const Tensor r = ops::sigmoid(ops::add(xi[0], hh[0]));
  const Tensor z = ops::sigmoid(ops::add(xi[1], hh[1]));
  const Tensor n = ops::tanh(ops::add(xi[2], ops::mul(r, hh[2])));
  // h' = (1 - z) n + z h = n + z (h - n)
  return {ops::add(n, ops::mul(z, ops::sub(state.h, n))), Tensor()};
}

LayerConfig Recurrent::config() const {
  return {{"hidden_size", hidden_},
          {"num_layers", std::int64_t{options_.layers}},
          {"return_sequences", options_.return_sequences},
          {"bias", options_.bias}};
}

RecurrentOptions Recurrent::options_from_config(const ConfigReader& c) {
  return {.layers = static_cast<int>(c.integer("num_layers")),
          .return_sequences = c.flag("return_sequences"),
          .bias = c.flag("bias")};
}

namespace {

// Rows of `matrix` (gates x H rows of `cols`) with its gates in `order`: ONNX's gate order from
// PyTorch's, which Accrue keeps.
std::vector<float> gates_reordered(const Tensor& matrix, std::int64_t H, const std::vector<int>& order) {
  const std::vector<float> v = matrix.to_vector<float>();
  const std::size_t block = static_cast<std::size_t>(H) * (v.size() / (order.size() * static_cast<std::size_t>(H)));
  std::vector<float> out;
  out.reserve(v.size());
  for (int gate : order) out.insert(out.end(), v.begin() + gate * block, v.begin() + (gate + 1) * block);
  return out;
}

}  // namespace

// One ONNX LSTM or GRU node per layer over (T, batch, features), forward only, the initial states
// zero as in forward. The gates are reordered: PyTorch's LSTM i,f,g,o to ONNX's i,o,f,c, its GRU
// r,z,n to ONNX's z,r,h, with linear_before_reset as PyTorch's GRU computes n.
std::string Recurrent::to_onnx(onnx::Graph& g, const std::string& x) const {
  const bool lstm = gates_ == 4;
  const std::vector<int> order = lstm ? std::vector<int>{0, 3, 1, 2} : std::vector<int>{1, 0, 2};
  g.note(lstm ? "gates i,f,g,o (PyTorch's order) written as ONNX's i,o,f,c"
              : "gates r,z,n (PyTorch's order) written as ONNX's z,r,h, linear_before_reset=1");
  const std::int64_t H = hidden_, rows = gates_ * H;
  std::string sequence = g.node("Transpose", {x}, {{"perm", std::vector<std::int64_t>{1, 0, 2}}});
  std::string last;
  for (int k = 0; k < options_.layers; ++k) {
    const std::int64_t in = k == 0 ? input_shape()[1] : H;
    std::vector<std::string> inputs{sequence,
                                    g.weight(fmt::format("W_l{}", k), gates_reordered(parameter(k, 0), H, order), {1, rows, in}),
                                    g.weight(fmt::format("R_l{}", k), gates_reordered(parameter(k, 1), H, order), {1, rows, H})};
    if (options_.bias) {
      std::vector<float> b = gates_reordered(parameter(k, 2), H, order);
      const std::vector<float> hidden_bias = gates_reordered(parameter(k, 3), H, order);
      b.insert(b.end(), hidden_bias.begin(), hidden_bias.end());
      inputs.push_back(g.weight(fmt::format("B_l{}", k), std::move(b), {1, 2 * rows}));
    }
    onnx::Attributes attributes{{"hidden_size", H}};
    if (!lstm) attributes.emplace_back("linear_before_reset", std::int64_t{1});
    const std::vector<std::string> out = g.nodes(lstm ? "LSTM" : "GRU", std::move(inputs), 2, std::move(attributes));
    // Y is (T, directions, batch, H); Y_h (directions, batch, H).
    sequence = g.node("Squeeze", {out[0], g.ints({1})});
    last = out[1];
  }
  if (options_.return_sequences) return g.node("Transpose", {sequence}, {{"perm", std::vector<std::int64_t>{1, 0, 2}}});
  return g.node("Squeeze", {last, g.ints({0})});
}

}  // namespace accrue::layers
