#include "preprocessing.hpp"

#include "../../framework/ops/autocast.hpp"
#include "../../framework/ops/ops.hpp"
#include "../layer_registry.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

namespace detail {

void check_size(Size2 size, const char* layer) {
  ACCRUE_CHECK(size.h >= 1 && size.w >= 1 && size.h <= 65536 && size.w <= 65536,
               "{}{{{}}}: the size must be 1 to 65536 pixels each way", layer, size.str());
}

void require_image(const Shape& sample, const Layer& layer) {
  ACCRUE_CHECK_SHAPE(sample.rank() == 3 && sample[0] >= 1 && sample[1] >= 1 && sample[2] >= 1,
                     "{} takes images (channels, height, width), not samples of shape {}", layer.describe(), sample);
}

std::string interpolation_name(transforms::Interpolation interpolation) {
  switch (interpolation) {
    case transforms::Interpolation::nearest: return "nearest";
    case transforms::Interpolation::bilinear: return "bilinear";
    case transforms::Interpolation::bicubic: return "bicubic";
  }
  return "bilinear";
}

transforms::Interpolation interpolation_named(const std::string& name) {
  for (auto i : {transforms::Interpolation::nearest, transforms::Interpolation::bilinear, transforms::Interpolation::bicubic})
    if (interpolation_name(i) == name) return i;
  throw ValueError(fmt::format("interpolation '{}' is none of nearest, bilinear, bicubic", name));
}

namespace {

// The (out x in) taps of one axis, transposed to (in x out) as the right operand of a product.
Tensor taps_transposed(std::int64_t in, std::int64_t out, transforms::Interpolation interpolation, bool antialias,
                       Device device) {
  const std::vector<float> m = transforms::functional::resize_matrix(in, out, interpolation, antialias);
  std::vector<float> t(m.size());
  for (std::int64_t i = 0; i < out; ++i)
    for (std::int64_t j = 0; j < in; ++j) t[static_cast<std::size_t>(j * out + i)] = m[static_cast<std::size_t>(i * in + j)];
  return Tensor::from(t, Shape{in, out}).to(device);
}

// Rows [top, top + height) and columns [left, left + width) of (N, C, H, W) images.
Tensor window(const Tensor& x, const transforms::functional::Window& w) {
  const Tensor rows = w.height == x.size(2) ? x : ops::slice(x, 2, w.top, w.top + w.height);
  return w.width == x.size(3) ? rows : ops::slice(rows, 3, w.left, w.left + w.width);
}

}  // namespace

// Along the width first, then the height, as transforms::functional::resize runs its two passes;
// an axis already of its size is left alone, as there.
Tensor resize_images(const Tensor& x, Size2 size, transforms::Interpolation interpolation, bool antialias,
                     bool crop_to_aspect_ratio) {
  const AutocastGuard float32{std::nullopt};
  Tensor y = x.dtype() == DType::f32 ? x : ops::cast(x, DType::f32);
  if (crop_to_aspect_ratio) y = window(y, transforms::functional::aspect_ratio_window(y.size(2), y.size(3), size));
  const std::int64_t n = y.size(0), c = y.size(1), h = y.size(2), w = y.size(3);
  const bool nearest = interpolation == transforms::Interpolation::nearest;
  if (w != size.w || nearest) {
    y = ops::matmul(y.reshape(Shape{n * c * h, w}), taps_transposed(w, size.w, interpolation, antialias, y.device()));
    y = y.reshape(Shape{n, c, h, size.w});
  }
  if (h != size.h || nearest) {
    const Tensor columns = ops::transpose(y.reshape(Shape{n * c, h, size.w}), 1, 2).reshape(Shape{n * c * size.w, h});
    y = ops::matmul(columns, taps_transposed(h, size.h, interpolation, antialias, y.device()));
    y = ops::transpose(y.reshape(Shape{n * c, size.w, size.h}), 1, 2).reshape(Shape{n, c, size.h, size.w});
  }
  return y;
}

// The same products as MatMul nodes, their taps constants for this sample's size.
std::string resize_images_onnx(onnx::Graph& g, const std::string& x, const Shape& sample, Size2 size,
                               transforms::Interpolation interpolation, bool antialias, bool crop_to_aspect_ratio) {
  if (g.any_image_size(x)) return resize_any_size_onnx(g, x, size, interpolation, antialias, crop_to_aspect_ratio);
  std::string y = x;
  std::int64_t h = sample[1], w = sample[2];
  if (crop_to_aspect_ratio) {
    const auto win = transforms::functional::aspect_ratio_window(h, w, size);
    y = g.node("Slice", {y, g.ints({win.top, win.left}), g.ints({win.top + win.height, win.left + win.width}), g.ints({2, 3})});
    h = win.height, w = win.width;
  }
  const bool nearest = interpolation == transforms::Interpolation::nearest;
  if (w != size.w || nearest) {
    const Tensor t = taps_transposed(w, size.w, interpolation, antialias, Device::cpu());
    y = g.node("MatMul", {y, g.weight("width_taps", t)});
  }
  if (h != size.h || nearest) {
    // (h_out, h) @ (N, C, h, w_out): MatMul broadcasts the left matrix over the images.
    const Tensor t = taps_transposed(h, size.h, interpolation, antialias, Device::cpu());
    y = g.node("MatMul", {g.weight_transposed("height_taps", t), y});
  }
  return y;
}

}  // namespace detail

// ---- Rescaling -------------------------------------------------------------------------------

Rescaling::Rescaling(float scale, RescalingOptions options) : scale_(scale), options_(std::move(options)) {
  set_name(options_.name);
  ACCRUE_CHECK(std::isfinite(scale) && std::isfinite(options_.offset), "Rescaling{{{}, {{.offset = {}}}}}: not finite",
               scale, options_.offset);
}

LayerConfig Rescaling::config() const { return {{"scale", float_option(scale_)}, {"offset", float_option(options_.offset)}}; }

Rescaling Rescaling::from_config(const ConfigReader& c) { return Rescaling{c.real("scale"), {.offset = c.real("offset")}}; }

Tensor Rescaling::forward(const Tensor& x) {
  const AutocastGuard float32{std::nullopt};
  return ops::affine(x.dtype() == DType::f32 ? x : ops::cast(x, DType::f32), scale_, options_.offset);
}

std::string Rescaling::to_onnx(onnx::Graph& g, const std::string& x) const {
  return g.node("Add", {g.node("Mul", {x, g.scalar(scale_)}), g.scalar(options_.offset)});
}

// Its gradient is the output's times the scale: nothing kept.
LayerMemoryUse Rescaling::memory_use(const LayerMemoryQuery&) const {
  return {.output_dtype = DType::f32, .keeps_input = false, .keeps_output = false};
}

// ---- Resizing --------------------------------------------------------------------------------

Resizing::Resizing(Size2 size, ResizingOptions options) : size_(size), options_(std::move(options)) {
  set_name(options_.name);
  detail::check_size(size, "Resizing");
}

LayerConfig Resizing::config() const {
  return {{"size", size_option(size_)},
          {"interpolation", detail::interpolation_name(options_.interpolation)},
          {"crop_to_aspect_ratio", options_.crop_to_aspect_ratio},
          {"antialias", options_.antialias}};
}

Resizing Resizing::from_config(const ConfigReader& c) {
  return Resizing{c.size("size"),
                  {.interpolation = detail::interpolation_named(c.text("interpolation")),
                   .crop_to_aspect_ratio = c.flag("crop_to_aspect_ratio"),
                   .antialias = c.flag("antialias")}};
}

Shape Resizing::build(const Shape& input_shape, Generator&) {
  detail::require_image(input_shape, *this);
  return {input_shape[0], size_.h, size_.w};
}

Tensor Resizing::forward(const Tensor& x) {
  return detail::resize_images(x, size_, options_.interpolation, options_.antialias, options_.crop_to_aspect_ratio);
}

std::string Resizing::to_onnx(onnx::Graph& g, const std::string& x) const {
  return detail::resize_images_onnx(g, x, input_shape(), size_, options_.interpolation, options_.antialias,
                                    options_.crop_to_aspect_ratio);
}

// Between the two products the half-resized images; backward multiplies by the same taps.
LayerMemoryUse Resizing::memory_use(const LayerMemoryQuery& q) const {
  const Shape half{q.input_shape[0], q.input_shape[1], size_.w};
  return {.output_dtype = DType::f32,
          .keeps_input = false,
          .keeps_output = false,
          .forward_scratch = 2 * q.bytes(half, DType::f32),
          .backward_scratch = 2 * q.bytes(half, DType::f32)};
}

// ---- CenterCrop ------------------------------------------------------------------------------

CenterCrop::CenterCrop(Size2 size, CenterCropOptions options) : size_(size) {
  set_name(options.name);
  detail::check_size(size, "CenterCrop");
}

LayerConfig CenterCrop::config() const { return {{"size", size_option(size_)}}; }

CenterCrop CenterCrop::from_config(const ConfigReader& c) { return CenterCrop{c.size("size")}; }

Shape CenterCrop::build(const Shape& input_shape, Generator&) {
  detail::require_image(input_shape, *this);
  return {input_shape[0], size_.h, size_.w};
}

Tensor CenterCrop::forward(const Tensor& x) {
  const std::int64_t h = x.size(2), w = x.size(3);
  if (h < size_.h || w < size_.w)
    return detail::resize_images(x, size_, transforms::Interpolation::bilinear, true, true);
  const AutocastGuard float32{std::nullopt};
  const Tensor y = x.dtype() == DType::f32 ? x : ops::cast(x, DType::f32);
  return detail::window(y, {(h - size_.h) / 2, (w - size_.w) / 2, size_.h, size_.w});
}

std::string CenterCrop::to_onnx(onnx::Graph& g, const std::string& x) const {
  if (g.any_image_size(x)) return detail::center_crop_any_size_onnx(g, x, size_);
  const std::int64_t h = input_shape()[1], w = input_shape()[2];
  if (h < size_.h || w < size_.w)
    return detail::resize_images_onnx(g, x, input_shape(), size_, transforms::Interpolation::bilinear, true, true);
  const std::int64_t top = (h - size_.h) / 2, left = (w - size_.w) / 2;
  return g.node("Slice", {x, g.ints({top, left}), g.ints({top + size_.h, left + size_.w}), g.ints({2, 3})});
}

// The window is a new output; its gradient goes into zeros of the input's shape.
LayerMemoryUse CenterCrop::memory_use(const LayerMemoryQuery&) const {
  return {.output_dtype = DType::f32, .keeps_input = false, .keeps_output = false};
}

}  // namespace accrue::layers
