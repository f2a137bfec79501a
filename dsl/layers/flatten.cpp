#include "flatten.hpp"

#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

Shape Flatten::build(const Shape& input_shape, Generator& /*generator*/) { return Shape{input_shape.numel()}; }

Tensor Flatten::forward(const Tensor& x) { return ops::flatten(x, 1); }

// A view: nothing allocated, nothing kept.
LayerMemoryUse Flatten::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .output_is_view = true, .keeps_input = false, .keeps_output = false};
}

std::string Flatten::to_onnx(onnx::Graph& g, const std::string& x) const {
  return g.node("Flatten", {x}, {{"axis", std::int64_t{1}}});
}

}  // namespace accrue::layers
