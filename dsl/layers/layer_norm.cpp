#include "layer_norm.hpp"
#include "../layer_registry.hpp"

#include <algorithm>

#include "normalization_memory.hpp"
#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

LayerNorm::LayerNorm(LayerNormOptions options) : options_(std::move(options)) {
  ACCRUE_CHECK(options_.dims >= 1, "LayerNorm normalizes at least one dimension, got dims = {}", options_.dims);
  ACCRUE_CHECK(options_.eps > 0.0f, "LayerNorm needs a positive eps, got {}", options_.eps);
  if (!options_.name.empty()) set_name(options_.name);
}

Shape LayerNorm::build(const Shape& input_shape, Generator& /*generator*/) {
  ACCRUE_CHECK_SHAPE(options_.dims <= input_shape.rank(),
                     "LayerNorm over the last {} dimensions needs samples of at least that rank, got {}", options_.dims,
                     input_shape);
  normalized_ = input_shape.drop_front(input_shape.rank() - options_.dims);
  if (options_.affine) {
    const TensorOptions param{.category = MemoryCategory::parameters};
    add_parameter("weight", Tensor::ones(normalized_, param));
    add_parameter("bias", Tensor::zeros(normalized_, param));
  }
  return input_shape;
}

Tensor LayerNorm::forward(const Tensor& x) {
  const Tensor weight = options_.affine ? named_parameters().at(0).second : Tensor();
  const Tensor bias = options_.affine ? named_parameters().at(1).second : Tensor();
  return ops::layer_norm(x, normalized_, weight, bias, options_.eps);
}


LayerMemoryUse LayerNorm::memory_use(const LayerMemoryQuery& q) const {
  const std::int64_t rows = q.batch * (q.input_shape.numel() / std::max<std::int64_t>(1, normalized_.numel()));
  return normalization_memory_use(q, rows, normalized_.numel());
}

LayerConfig LayerNorm::config() const {
  return {{"dims", std::int64_t{options_.dims}}, {"eps", float_option(options_.eps)}, {"affine", options_.affine}};
}

LayerNorm LayerNorm::from_config(const ConfigReader& c) {
  return LayerNorm{{.dims = static_cast<int>(c.integer("dims")), .eps = c.real("eps"), .affine = c.flag("affine")}};
}

std::string LayerNorm::to_onnx(onnx::Graph& g, const std::string& x) const {
  std::vector<std::string> inputs{x};
  if (options_.affine) {
    inputs.push_back(g.weight("weight", named_parameters().at(0).second));
    inputs.push_back(g.weight("bias", named_parameters().at(1).second));
  } else {
    inputs.push_back(g.weight("weight", Tensor::ones(normalized_)));
  }
  return g.node("LayerNormalization", std::move(inputs),
                {{"axis", std::int64_t{-options_.dims}}, {"epsilon", options_.eps}});
}

}  // namespace accrue::layers
