#include "accrue/dsl/layers/group_norm.hpp"
#include "accrue/dsl/layer_registry.hpp"

#include "accrue/dsl/layers/normalization_memory.hpp"
#include "accrue/framework/ops.hpp"

namespace accrue::layers {

GroupNorm::GroupNorm(std::int64_t groups, GroupNormOptions options) : groups_(groups), options_(std::move(options)) {
  ACCRUE_CHECK(groups > 0, "GroupNorm needs a positive number of groups, got {}", groups);
  ACCRUE_CHECK(options_.eps > 0.0f, "GroupNorm needs a positive eps, got {}", options_.eps);
  if (!options_.name.empty()) set_name(options_.name);
}

Shape GroupNorm::build(const Shape& input_shape, Generator& /*generator*/) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() >= 1, "GroupNorm needs samples with a channel dimension, got {}", input_shape);
  const std::int64_t C = input_shape[0];
  ACCRUE_CHECK_SHAPE(C % groups_ == 0, "GroupNorm: {} channels (samples {}) do not divide into {} groups", C,
                     input_shape, groups_);
  if (options_.affine) {
    const TensorOptions param{.category = MemoryCategory::parameters};
    add_parameter("weight", Tensor::ones({C}, param));
    add_parameter("bias", Tensor::zeros({C}, param));
  }
  return input_shape;
}

Tensor GroupNorm::forward(const Tensor& x) {
  const Tensor weight = options_.affine ? named_parameters().at(0).second : Tensor();
  const Tensor bias = options_.affine ? named_parameters().at(1).second : Tensor();
  return ops::group_norm(x, groups_, weight, bias, options_.eps);
}


LayerMemoryUse GroupNorm::memory_use(const LayerMemoryQuery& q) const {
  return normalization_memory_use(q, q.batch * groups_, q.input_shape[0]);
}

LayerConfig GroupNorm::config() const {
  return {{"groups", groups_}, {"eps", float_option(options_.eps)}, {"affine", options_.affine}};
}

GroupNorm GroupNorm::from_config(const ConfigReader& c) {
  return GroupNorm{c.integer("groups"), {.eps = c.real("eps"), .affine = c.flag("affine")}};
}

}  // namespace accrue::layers
