#include "accrue/dsl/layers/flatten.hpp"

#include "accrue/framework/ops.hpp"

namespace accrue::layers {

Shape Flatten::build(const Shape& input_shape, Generator& /*generator*/) { return Shape{input_shape.numel()}; }

Tensor Flatten::forward(const Tensor& x) { return ops::flatten(x, 1); }

}  // namespace accrue::layers
