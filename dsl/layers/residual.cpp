#include "residual.hpp"

#include "../../framework/ops/ops.hpp"

namespace accrue::layers {

Shape Residual::build(const Shape& input_shape, Generator& generator) {
  const Shape shape = build_inner(input_shape, generator);
  ACCRUE_CHECK_SHAPE(shape == input_shape,
                     "Residual adds its input to what its layers give, and they turn samples {} into {}", input_shape,
                     shape);
  return input_shape;
}

Tensor Residual::forward(const Tensor& x) {
  Tensor y = x;
  for (Layer* l : inner_layers()) y = l->forward(y);
  return ops::add(x, y);
}

// The inner layers as a chain; the sum keeps nothing.
LayerMemoryUse Residual::memory_use(const LayerMemoryQuery& q) const {
  LayerMemoryUse total = chain_memory_use(given_layers(), q);
  total.output_dtype = DType::f32;
  return total;
}

std::string Residual::to_onnx(onnx::Graph& g, const std::string& x) const {
  return g.node("Add", {x, inner_to_onnx(g, x)});
}

}  // namespace accrue::layers
