#include "accrue/dsl/layers/flatten.hpp"

#include "accrue/framework/ops.hpp"

namespace accrue::layers {

Shape Flatten::build(const Shape& input_shape, Generator& /*generator*/) { return Shape{input_shape.numel()}; }

Tensor Flatten::forward(const Tensor& x) { return ops::flatten(x, 1); }

// A view: nothing allocated, nothing kept.
LayerMemoryUse Flatten::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .output_is_view = true, .keeps_input = false, .keeps_output = false};
}

}  // namespace accrue::layers
