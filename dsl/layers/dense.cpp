#include "accrue/dsl/layers/dense.hpp"

#include <cmath>

#include "accrue/framework/ops.hpp"

namespace accrue::layers {

Dense::Dense(std::int64_t units, DenseOptions options) : units_(units), options_(std::move(options)) {
  ACCRUE_CHECK(units > 0, "Dense needs a positive number of units, got {}", units);
  if (!options_.name.empty()) set_name(options_.name);
}

Shape Dense::build(const Shape& input_shape, Generator& generator) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() >= 1 && input_shape[-1] > 0,
                     "Dense needs samples with a non-empty last dimension (the features), got {}; put Flatten before it "
                     "for images",
                     input_shape);
  const std::int64_t in_features = input_shape[-1];
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_features));
  const TensorOptions param{.category = MemoryCategory::parameters};
  add_parameter("weight", Tensor::uniform({units_, in_features}, -bound, bound, &generator, param));
  if (options_.bias) add_parameter("bias", Tensor::uniform({units_}, -bound, bound, &generator, param));
  Shape out = input_shape;
  out[-1] = units_;
  return out;
}

Tensor Dense::forward(const Tensor& x) { return ops::linear(x, weight(), bias()); }

}  // namespace accrue::layers
