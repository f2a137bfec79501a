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

}  // namespace accrue::layers
