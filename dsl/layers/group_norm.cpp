#include "group_norm.hpp"
#include "../layer_registry.hpp"

#include "normalization_memory.hpp"
#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

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

// Opset 17 has no GroupNormalization (18's was redefined in 21): the groups as the channels of an
// InstanceNormalization, (N, G, rest), then the sample's shape again and the affine part per
// channel, as torch.onnx writes it.
std::string GroupNorm::to_onnx(onnx::Graph& g, const std::string& x) const {
  const Shape& sample = input_shape();
  const std::int64_t C = sample[0];
  const std::string grouped = g.node("Reshape", {x, g.ints({0, groups_, -1})});
  const std::string normed =
      g.node("InstanceNormalization",
             {grouped, g.weight("group_scale", std::vector<float>(static_cast<std::size_t>(groups_), 1.0f), {groups_}),
              g.weight("group_bias", std::vector<float>(static_cast<std::size_t>(groups_), 0.0f), {groups_})},
             {{"epsilon", options_.eps}});
  std::vector<std::int64_t> shape{0}, per_channel{C};
  for (std::int64_t d : sample) shape.push_back(d);
  for (int d = 1; d < sample.rank(); ++d) per_channel.push_back(1);
  const std::string y = g.node("Reshape", {normed, g.ints(shape)});
  if (!options_.affine) return y;
  const std::string scaled = g.node("Mul", {y, g.weight("weight", named_parameters().at(0).second.to_vector<float>(), per_channel)});
  return g.node("Add", {scaled, g.weight("bias", named_parameters().at(1).second.to_vector<float>(), per_channel)});
}

}  // namespace accrue::layers
