#include "pooling.hpp"
#include "../layer_registry.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

template <PoolKind Kind>
Pool2d<Kind>::Pool2d(Size2 kernel_size, Pool2dOptions options)
    : options_{.kernel = kernel_size, .stride = options.stride, .padding = options.padding,
               .count_include_pad = options.count_include_pad} {
  if (!options.name.empty()) this->set_name(options.name);
}

template <PoolKind Kind>
Shape Pool2d<Kind>::build(const Shape& in, Generator&) {
  const std::string layer = this->type_name();
  const ops::Pool2dOptions& o = options_;
  ACCRUE_CHECK_SHAPE(in.rank() == 3, "{} needs image samples (channels, height, width), got {}", layer, in);
  const Size2 stride = o.stride.value_or(o.kernel);
  ACCRUE_CHECK(o.kernel.h > 0 && o.kernel.w > 0 && stride.h > 0 && stride.w > 0,
               "{} needs a positive window and stride, got {} and {}", layer, o.kernel.str(), stride.str());
  ACCRUE_CHECK(o.padding.h >= 0 && o.padding.w >= 0 && 2 * o.padding.h <= o.kernel.h && 2 * o.padding.w <= o.kernel.w,
               "{}: padding must be at most half the window, got padding {} for window {}", layer, o.padding.str(),
               o.kernel.str());
  const auto [P, Q] = ops::pool2d_output_size({in[1], in[2]}, o);
  ACCRUE_CHECK_SHAPE(P > 0 && Q > 0, "{}: a {}x{} image is smaller than the {} window with padding {}", layer, in[1],
                     in[2], o.kernel.str(), o.padding.str());
  return Shape{in[0], P, Q};
}

template <PoolKind Kind>
Tensor Pool2d<Kind>::forward(const Tensor& x) {
  return Kind == PoolKind::max ? ops::max_pool2d(x, options_) : ops::avg_pool2d(x, options_);
}

// Pooling computes in float32, or bfloat16 on the CPU, and keeps its input and output (max-pooling
// finds the winners again in backward from them; cuDNN needs both).
template <PoolKind Kind>
LayerMemoryUse Pool2d<Kind>::memory_use(const LayerMemoryQuery& q) const {
  const bool converts = !ops::pool2d_keeps_dtype(q.device, q.input_dtype);
  return {.output_dtype = converts ? DType::f32 : q.input_dtype, .keeps_input = !converts, .keeps_output = true,
          .kept_other = converts ? q.bytes(q.input_shape, DType::f32) : 0};
}

template <PoolKind Kind>
LayerConfig Pool2d<Kind>::config() const {
  const ops::Pool2dOptions& o = options_;
  return {{"kernel_size", size_option(o.kernel)},
          {"stride", o.stride ? size_option(*o.stride) : ConfigValue{}},
          {"padding", size_option(o.padding)},
          {"count_include_pad", o.count_include_pad}};
}

template <PoolKind Kind>
Pool2d<Kind> Pool2d<Kind>::from_config(const ConfigReader& c) {
  return Pool2d{c.size("kernel_size"),
                {.stride = c.is_set("stride") ? std::optional<Size2>{c.size("stride")} : std::nullopt,
                 .padding = c.size("padding"),
                 .count_include_pad = c.flag("count_include_pad")}};
}

template <PoolKind Kind>
std::string Pool2d<Kind>::to_onnx(onnx::Graph& g, const std::string& x) const {
  const ops::Pool2dOptions& o = options_;
  const Size2 stride = o.stride.value_or(o.kernel);
  onnx::Attributes attributes{{"kernel_shape", std::vector<std::int64_t>{o.kernel.h, o.kernel.w}},
                              {"strides", std::vector<std::int64_t>{stride.h, stride.w}},
                              {"pads", std::vector<std::int64_t>{o.padding.h, o.padding.w, o.padding.h, o.padding.w}}};
  if (Kind == PoolKind::max) return g.node("MaxPool", {x}, std::move(attributes));
  attributes.emplace_back("count_include_pad", std::int64_t{o.count_include_pad});
  return g.node("AveragePool", {x}, std::move(attributes));
}

template class Pool2d<PoolKind::max>;
template class Pool2d<PoolKind::average>;

Shape GlobalAvgPool2d::build(const Shape& input_shape, Generator&) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 3 && input_shape[1] * input_shape[2] > 0,
                     "GlobalAvgPool2d needs non-empty image samples (channels, height, width), got {}", input_shape);
  return Shape{input_shape[0]};
}

Tensor GlobalAvgPool2d::forward(const Tensor& x) {
  return ops::mean(ops::reshape(x, {x.size(0), x.size(1), x.size(2) * x.size(3)}), 2);
}

// A mean over a view: its backward needs only the shape.
LayerMemoryUse GlobalAvgPool2d::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .keeps_input = false, .keeps_output = false};
}


std::string GlobalAvgPool2d::to_onnx(onnx::Graph& g, const std::string& x) const {
  return g.node("Flatten", {g.node("GlobalAveragePool", {x})}, {{"axis", std::int64_t{1}}});
}

}  // namespace accrue::layers
