#include "conv2d.hpp"
#include "../layer_registry.hpp"

#include <cmath>
#include "../onnx.hpp"

namespace accrue::layers {

Conv2d::Conv2d(std::int64_t filters, Size2 kernel_size, Conv2dOptions options)
    : filters_(filters), kernel_(kernel_size), options_(std::move(options)) {
  ACCRUE_CHECK(filters > 0, "Conv2d needs a positive number of filters, got {}", filters);
  ACCRUE_CHECK(kernel_.h > 0 && kernel_.w > 0, "Conv2d needs a positive kernel size, got {}", kernel_.str());
  const Conv2dOptions& o = options_;
  ACCRUE_CHECK(o.stride.h > 0 && o.stride.w > 0 && o.dilation.h > 0 && o.dilation.w > 0,
               "Conv2d needs a positive stride and dilation, got stride {} and dilation {}", o.stride.str(),
               o.dilation.str());
  ACCRUE_CHECK(o.padding.size.h >= 0 && o.padding.size.w >= 0, "Conv2d needs non-negative padding, got {}",
               o.padding.size.str());
  ACCRUE_CHECK(o.groups >= 1 && filters % o.groups == 0, "Conv2d: {} filters do not divide into {} groups", filters,
               o.groups);
  if (o.padding.same) {
    const std::int64_t span_h = o.dilation.h * (kernel_.h - 1), span_w = o.dilation.w * (kernel_.w - 1);
    ACCRUE_CHECK(o.stride == Size2{1} && span_h % 2 == 0 && span_w % 2 == 0,
                 "Conv2d padding 'same' needs stride 1 and an odd kernel (after dilation), got kernel {}, stride {}, "
                 "dilation {}",
                 kernel_.str(), o.stride.str(), o.dilation.str());
    padding_ = Size2{span_h / 2, span_w / 2};
  } else {
    padding_ = o.padding.size;
  }
  if (!options_.name.empty()) set_name(options_.name);
}

ops::Conv2dOptions Conv2d::op_options() const {
  return {.stride = options_.stride, .padding = padding_, .dilation = options_.dilation, .groups = options_.groups};
}

Shape Conv2d::build(const Shape& input_shape, Generator& generator) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 3,
                     "Conv2d needs image samples (channels, height, width), got {}; a (height, width) image needs a "
                     "channel dimension, e.g. Input{{1, 28, 28}}",
                     input_shape);
  const std::int64_t C = input_shape[0], H = input_shape[1], W = input_shape[2], groups = options_.groups;
  ACCRUE_CHECK_SHAPE(C % groups == 0, "Conv2d: {} input channels do not divide into {} groups", C, groups);
  const auto [P, Q] = ops::conv2d_output_size({H, W}, kernel_, op_options());
  ACCRUE_CHECK_SHAPE(P > 0 && Q > 0, "Conv2d: a {}x{} image is smaller than the {} kernel (dilation {}, padding {})", H,
                     W, kernel_.str(), options_.dilation.str(), padding_.str());
  const std::int64_t fan_in = C / groups * kernel_.h * kernel_.w;
  const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
  const TensorOptions param{.category = MemoryCategory::parameters};
  add_parameter("weight",
                Tensor::uniform({filters_, C / groups, kernel_.h, kernel_.w}, -bound, bound, &generator, param));
  if (options_.bias) add_parameter("bias", Tensor::uniform({filters_}, -bound, bound, &generator, param));
  return Shape{filters_, P, Q};
}

Tensor Conv2d::forward(const Tensor& x) { return ops::conv2d(x, weight(), bias(), op_options()); }

// Keeps its input (converted to float32 first when it is neither float32 nor the bfloat16 the
// product runs in), and takes conv2d's scratch; in bfloat16 the output is bfloat16 and the weight's
// packs may be kept through a window.
LayerMemoryUse Conv2d::memory_use(const LayerMemoryQuery& q) const {
  const bool bf16 = ops::conv2d_computes_bf16(q.device, q.input_dtype, q.autocast);
  const bool converts = q.input_dtype != DType::f32 && !(bf16 && q.input_dtype == DType::bf16);
  const DType x_type = converts ? DType::f32 : q.input_dtype;
  const ops::OpScratch scratch = ops::conv2d_scratch(q.device, bf16 ? std::optional{x_type} : std::nullopt, q.batch,
                                                     q.input_shape, filters_, kernel_, op_options());
  return {.output_dtype = bf16 ? DType::bf16 : DType::f32, .keeps_input = !converts, .keeps_output = false,
          .kept_other = converts ? q.bytes(q.input_shape, DType::f32) : 0,
          .forward_scratch = scratch.forward, .backward_scratch = scratch.backward,
          .input_gradient_scratch = scratch.input_gradient, .kept_packs = scratch.kept_forward, .kept_packs_for_input_gradient = scratch.kept_for_input_gradient};
}

LayerConfig Conv2d::config() const {
  const Conv2dOptions& o = options_;
  return {{"filters", filters_},
          {"kernel_size", size_option(kernel_)},
          {"stride", size_option(o.stride)},
          {"padding", o.padding.same ? ConfigValue{std::string{"same"}} : size_option(o.padding.size)},
          {"dilation", size_option(o.dilation)},
          {"groups", o.groups},
          {"bias", o.bias}};
}

Conv2d Conv2d::from_config(const ConfigReader& c) {
  const bool same = std::holds_alternative<std::string>(c.value("padding"));
  if (same && c.text("padding") != "same")
    throw ValueError(fmt::format("Conv2d: padding '{}' is neither 'same' nor sizes", c.text("padding")));
  return Conv2d{c.integer("filters"), c.size("kernel_size"),
                {.stride = c.size("stride"),
                 .padding = same ? layers::same : Padding{c.size("padding")},
                 .dilation = c.size("dilation"),
                 .groups = c.integer("groups"),
                 .bias = c.flag("bias")}};
}

std::string Conv2d::to_onnx(onnx::Graph& g, const std::string& x) const {
  std::vector<std::string> inputs{x, g.weight("weight", weight())};
  if (options_.bias) inputs.push_back(g.weight("bias", bias()));
  const Conv2dOptions& o = options_;
  return g.node("Conv", std::move(inputs),
                {{"kernel_shape", std::vector<std::int64_t>{kernel_.h, kernel_.w}},
                 {"strides", std::vector<std::int64_t>{o.stride.h, o.stride.w}},
                 {"pads", std::vector<std::int64_t>{padding_.h, padding_.w, padding_.h, padding_.w}},
                 {"dilations", std::vector<std::int64_t>{o.dilation.h, o.dilation.w}},
                 {"group", o.groups}});
}

}  // namespace accrue::layers
