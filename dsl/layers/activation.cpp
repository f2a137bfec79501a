#include "activation.hpp"

#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

Tensor ReLU::forward(const Tensor& x) { return ops::relu(x); }
Tensor GELU::forward(const Tensor& x) { return ops::gelu(x, options_.tanh_approximation); }
Tensor Sigmoid::forward(const Tensor& x) { return ops::sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return ops::tanh(x); }

Shape Softmax::build(const Shape& input_shape, Generator& /*generator*/) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() >= 1, "Softmax needs samples with at least one dimension, got {}", input_shape);
  ACCRUE_CHECK_SHAPE(dim_ >= -input_shape.rank() && dim_ < input_shape.rank(),
                     "Softmax over sample dimension {} of samples shaped {}", dim_, input_shape);
  return input_shape;
}

// dim counts within the sample; the batch dimension comes first in x.
Tensor Softmax::forward(const Tensor& x) { return ops::softmax(x, dim_ < 0 ? dim_ : dim_ + 1); }

// Element-wise ops keep their input's dtype and keep for backward the one of x and y their
// derivative reads (kernels/common/unary.hpp); softmax computes in float32 and keeps its output.
LayerMemoryUse ReLU::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .keeps_input = false, .keeps_output = true};
}
LayerMemoryUse GELU::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .keeps_input = true, .keeps_output = false};
}
LayerMemoryUse Sigmoid::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .keeps_input = false, .keeps_output = true};
}
LayerMemoryUse Tanh::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .keeps_input = false, .keeps_output = true};
}
LayerMemoryUse Softmax::memory_use(const LayerMemoryQuery& q) const {
  const bool converts = q.input_dtype != DType::f32;
  return {.output_dtype = DType::f32, .keeps_input = false, .keeps_output = true,
          .forward_scratch = converts ? q.bytes(q.input_shape, DType::f32) : 0};
}

LayerConfig GELU::config() const { return {{"tanh_approximation", options_.tanh_approximation}}; }

LayerConfig Softmax::config() const { return {{"dim", std::int64_t{dim_}}}; }

std::string ReLU::to_onnx(onnx::Graph& g, const std::string& x) const { return g.node("Relu", {x}); }
std::string Sigmoid::to_onnx(onnx::Graph& g, const std::string& x) const { return g.node("Sigmoid", {x}); }
std::string Tanh::to_onnx(onnx::Graph& g, const std::string& x) const { return g.node("Tanh", {x}); }
std::string GELU::to_onnx(onnx::Graph& g, const std::string& x) const {
  return gelu_to_onnx(g, x, options_.tanh_approximation);
}
std::string Softmax::to_onnx(onnx::Graph& g, const std::string& x) const {
  return g.node("Softmax", {x}, {{"axis", std::int64_t{dim_ < 0 ? dim_ : dim_ + 1}}});
}

// Opset 17 has no Gelu (it came in 20): x/2 (1 + erf(x/sqrt 2)), or with tanh x/2 (1 + tanh(sqrt(2/pi)
// (x + 0.044715 x^3))), as torch.onnx writes them.
std::string gelu_to_onnx(onnx::Graph& g, const std::string& x, bool tanh_approximation) {
  std::string inner;
  if (tanh_approximation) {
    const std::string cube = g.node("Mul", {g.node("Mul", {x, x}), x});
    const std::string sum = g.node("Add", {x, g.node("Mul", {cube, g.scalar(0.044715f)})});
    inner = g.node("Tanh", {g.node("Mul", {sum, g.scalar(0.7978845608028654f)})});
  } else {
    inner = g.node("Erf", {g.node("Div", {x, g.scalar(1.4142135623730951f)})});
  }
  return g.node("Mul", {g.node("Mul", {x, g.node("Add", {inner, g.scalar(1.0f)})}), g.scalar(0.5f)});
}

}  // namespace accrue::layers
