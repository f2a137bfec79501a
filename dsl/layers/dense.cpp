#include "dense.hpp"
#include "../layer_registry.hpp"

#include <algorithm>
#include <cmath>

#include "../../framework/autograd/deferred_gradients.hpp"
#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

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

// Keeps its input for the weight's gradient (the weight itself is a parameter); accumulating in
// float32 with WeightGradients::per_window, rows of it and of the output's gradient wait for the
// window's close. Under autocast the product runs in the low type with a float32 accumulator the
// size of the output; an input in neither float32 nor that type is converted to float32 first, and
// the copy is what is kept.
LayerMemoryUse Dense::memory_use(const LayerMemoryQuery& q) const {
  Shape out = q.input_shape;
  out[-1] = units_;
  std::optional<DType> low = q.autocast;
  if (!low && is_low_precision(q.input_dtype)) low = q.input_dtype;
  const std::int64_t in = q.input_shape[-1], rows = q.batch * (q.input_shape.numel() / std::max<std::int64_t>(1, in));
  if (!low)
    return {.output_dtype = DType::f32, .keeps_input = true, .keeps_output = false,
            .deferred_gradient_rows = DeferredWeightGradients::buffer_bytes(q.device, rows, in, units_)};
  const bool converts = q.input_dtype != DType::f32 && q.input_dtype != *low;
  const DType x_type = converts ? DType::f32 : q.input_dtype;
  const ops::OpScratch scratch = ops::linear_scratch(q.device, *low, x_type, rows, in, units_, q.keeps_packs);
  return {.output_dtype = *low, .keeps_input = !converts, .keeps_output = false,
          .kept_other = converts ? q.bytes(q.input_shape, DType::f32) : 0,
          .forward_scratch = scratch.forward,
          .backward_scratch = scratch.backward,
          .input_gradient_scratch = scratch.input_gradient,
          .kept_packs = scratch.kept_forward,
          .kept_packs_for_input_gradient = scratch.kept_for_input_gradient};
}

LayerConfig Dense::config() const { return {{"units", units_}, {"bias", options_.bias}}; }

Dense Dense::from_config(const ConfigReader& c) { return Dense{c.integer("units"), {.bias = c.flag("bias")}}; }

// (batch, features) is one Gemm, as torch.onnx exports nn.Linear; longer samples multiply by the
// transposed weight (MatMul broadcasts over the leading dimensions) and add the bias.
std::string Dense::to_onnx(onnx::Graph& g, const std::string& x) const {
  if (input_shape().rank() == 1) {
    std::vector<std::string> inputs{x, g.weight("weight", weight())};
    if (options_.bias) inputs.push_back(g.weight("bias", bias()));
    return g.node("Gemm", std::move(inputs), {{"transB", std::int64_t{1}}});
  }
  const std::string y = g.node("MatMul", {x, g.weight_transposed("weight", weight())});
  return options_.bias ? g.node("Add", {y, g.weight("bias", bias())}) : y;
}

}  // namespace accrue::layers
