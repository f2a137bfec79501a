#include "accrue/dsl/layers/residual.hpp"

#include <algorithm>

#include "accrue/framework/ops.hpp"
#include "accrue/dsl/onnx.hpp"

namespace accrue::layers {

Shape Residual::build(const Shape& input_shape, Generator& generator) {
  Shape shape = input_shape;
  for (std::size_t i = 0; i < child_count(); ++i) shape = build_child(i, shape, generator);
  ACCRUE_CHECK_SHAPE(shape == input_shape,
                     "Residual adds its input to what its layers give, and they turn samples {} into {}", input_shape,
                     shape);
  return input_shape;
}

Tensor Residual::forward(const Tensor& x) {
  Tensor y = x;
  for (std::size_t i = 0; i < child_count(); ++i) y = child(i).forward(y);
  return ops::add(x, y);
}

// A tensor between two of the layers is kept once when either keeps it; the last one's output, when
// it keeps it, is counted in kept_other.
LayerMemoryUse chain_memory_use(const std::vector<const Layer*>& layers, const LayerMemoryQuery& q) {
  LayerMemoryUse total{.output_dtype = DType::f32, .keeps_input = false, .keeps_output = false};
  LayerMemoryQuery at = q;
  bool previous_keeps_output = false;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerMemoryUse u = layers[i]->memory_use(at);
    if (i == 0) total.keeps_input = u.keeps_input;
    else if (!u.output_is_view && (u.keeps_input || previous_keeps_output))
      total.kept_other += at.input_bytes();
    total.kept_other += u.kept_other;
    // Packs for the input's gradient: the chain's input may need none, an inner layer's always does.
    total.kept_packs += u.kept_packs + (i > 0 ? u.kept_packs_for_input_gradient : 0);
    if (i == 0) total.kept_packs_for_input_gradient = u.kept_packs_for_input_gradient;
    total.deferred_gradient_rows += u.deferred_gradient_rows;
    const Shape out = layers[i]->output_shape();
    total.forward_scratch = std::max(total.forward_scratch, u.forward_scratch + at.bytes(out, u.output_dtype));
    total.backward_scratch = std::max(total.backward_scratch, u.backward_scratch + at.input_bytes());
    previous_keeps_output = u.keeps_output;
    total.output_dtype = u.output_dtype;
    at.input_shape = out;
    at.input_dtype = u.output_dtype;
  }
  if (previous_keeps_output) total.kept_other += at.input_bytes();
  return total;
}

// The sum keeps nothing.
LayerMemoryUse Residual::memory_use(const LayerMemoryQuery& q) const {
  LayerMemoryUse total = chain_memory_use(given_layers(), q);
  total.output_dtype = DType::f32;
  return total;
}

std::string Residual::to_onnx(onnx::Graph& g, const std::string& x) const {
  std::string y = x;
  for (std::size_t i = 0; i < child_count(); ++i) y = g.layer(child(i), y);
  return g.node("Add", {x, y});
}

}  // namespace accrue::layers
