#include "accrue/dsl/layers/pooling.hpp"

namespace accrue::layers {
namespace {

ops::Pool2dOptions to_op(Size2 kernel, const Pool2dOptions& o) {
  return {.kernel = kernel, .stride = o.stride, .padding = o.padding, .count_include_pad = o.count_include_pad};
}

Shape pooled_shape(const char* layer, const Shape& in, const ops::Pool2dOptions& o) {
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

}  // namespace

MaxPool2d::MaxPool2d(Size2 kernel_size, Pool2dOptions options) : options_(to_op(kernel_size, options)) {
  if (!options.name.empty()) set_name(options.name);
}
Shape MaxPool2d::build(const Shape& input_shape, Generator&) { return pooled_shape("MaxPool2d", input_shape, options_); }
Tensor MaxPool2d::forward(const Tensor& x) { return ops::max_pool2d(x, options_); }

AvgPool2d::AvgPool2d(Size2 kernel_size, Pool2dOptions options) : options_(to_op(kernel_size, options)) {
  if (!options.name.empty()) set_name(options.name);
}
Shape AvgPool2d::build(const Shape& input_shape, Generator&) { return pooled_shape("AvgPool2d", input_shape, options_); }
Tensor AvgPool2d::forward(const Tensor& x) { return ops::avg_pool2d(x, options_); }

Shape GlobalAvgPool2d::build(const Shape& input_shape, Generator&) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 3 && input_shape[1] * input_shape[2] > 0,
                     "GlobalAvgPool2d needs non-empty image samples (channels, height, width), got {}", input_shape);
  return Shape{input_shape[0]};
}

Tensor GlobalAvgPool2d::forward(const Tensor& x) {
  return ops::mean(ops::reshape(x, {x.size(0), x.size(1), x.size(2) * x.size(3)}), 2);
}

// Pooling computes in float32 and keeps its input and output (max-pooling finds the winners again
// in backward from them; cuDNN needs both).
namespace {
LayerMemoryUse pooling_use(const LayerMemoryQuery& q) {
  const bool converts = q.input_dtype != DType::f32;
  return {.output_dtype = DType::f32, .keeps_input = !converts, .keeps_output = true,
          .kept_other = converts ? q.bytes(q.input_shape, DType::f32) : 0};
}
}  // namespace

LayerMemoryUse MaxPool2d::memory_use(const LayerMemoryQuery& q) const { return pooling_use(q); }
LayerMemoryUse AvgPool2d::memory_use(const LayerMemoryQuery& q) const { return pooling_use(q); }

// A mean over a view: its backward needs only the shape.
LayerMemoryUse GlobalAvgPool2d::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .keeps_input = false, .keeps_output = false};
}

}  // namespace accrue::layers
