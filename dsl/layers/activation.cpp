#include "accrue/dsl/layers/activation.hpp"

#include "accrue/framework/ops.hpp"

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

}  // namespace accrue::layers
