#include "reshape.hpp"

#include <algorithm>

#include <fmt/ranges.h>

#include "../../framework/ops/ops.hpp"
#include "../layer_registry.hpp"
#include "../onnx.hpp"
#include "batch_axis.hpp"

namespace accrue::layers {

Reshape::Reshape(std::vector<std::int64_t> shape, ReshapeOptions options) : shape_(std::move(shape)) {
  set_name(options.name);
  ACCRUE_CHECK(!shape_.empty() && shape_.size() < static_cast<std::size_t>(Shape::max_rank),
               "Reshape needs a sample shape of 1 to {} dimensions (the batch makes one more), got {}", Shape::max_rank - 1,
               shape_.size());
  ACCRUE_CHECK(std::count(shape_.begin(), shape_.end(), -1) <= 1, "Reshape({}): at most one entry may be -1",
               fmt::join(shape_, ", "));
  for (const std::int64_t d : shape_)
    ACCRUE_CHECK(d == -1 || d >= 1, "Reshape({}): entries are sizes of at least 1, or -1 once", fmt::join(shape_, ", "));
}

LayerConfig Reshape::config() const { return {{"shape", shape_}}; }

Reshape Reshape::from_config(const ConfigReader& c) { return Reshape{c.integers("shape")}; }

Shape Reshape::build(const Shape& input_shape, Generator& /*generator*/) {
  const std::int64_t values = input_shape.numel();
  std::int64_t known = 1;  // the product of the sizes given, while it stays within the sample's values
  bool fits = true;
  for (const std::int64_t d : shape_) {
    if (d == -1) continue;
    fits = fits && d <= values / known;
    if (fits) known *= d;
  }
  const bool free = std::count(shape_.begin(), shape_.end(), -1) == 1;
  ACCRUE_CHECK_SHAPE(fits && (free ? values % known == 0 : known == values),
                     "Reshape({}) cannot hold samples of shape {} ({} values)", fmt::join(shape_, ", "), input_shape, values);
  std::vector<std::int64_t> dims = shape_;
  for (std::int64_t& d : dims)
    if (d == -1) d = values / known;
  resolved_ = Shape(std::span<const std::int64_t>(dims));
  return resolved_;
}

Tensor Reshape::forward(const Tensor& x) { return ops::reshape(x, resolved_.prepend(x.size(0))); }

// A view of a contiguous input: nothing allocated, nothing kept.
LayerMemoryUse Reshape::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .output_is_view = true, .keeps_input = false, .keeps_output = false};
}

std::string Reshape::to_onnx(onnx::Graph& g, const std::string& x) const {
  std::vector<std::int64_t> dims{0};  // 0: the batch, copied from the input
  dims.insert(dims.end(), resolved_.dims().begin(), resolved_.dims().end());
  return g.node("Reshape", {x, g.ints(dims)});
}

Slice::Slice(SliceOptions options) : options_(std::move(options)) {
  set_name(options_.name);
  ACCRUE_CHECK(options_.begin >= 0 && options_.begin < options_.end,
               "Slice{{.begin = {}, .end = {}}}: needs 0 <= begin < end", options_.begin, options_.end);
}

LayerConfig Slice::config() const {
  return {{"axis", std::int64_t{options_.axis}}, {"begin", options_.begin}, {"end", options_.end}};
}

Slice Slice::from_config(const ConfigReader& c) {
  const std::int64_t axis = c.integer("axis");
  ACCRUE_CHECK(axis >= -64 && axis <= 64, "Slice: axis {} is not an axis of a tensor", axis);
  return Slice{{.axis = static_cast<int>(axis), .begin = c.integer("begin"), .end = c.integer("end")}};
}

Shape Slice::build(const Shape& input_shape, Generator& /*generator*/) {
  const int axis =
      detail::batch_axis(options_.axis, input_shape, fmt::format("Slice{{.axis = {}}}", options_.axis), "cuts");
  const std::int64_t size = input_shape[axis - 1];
  ACCRUE_CHECK_SHAPE(options_.end <= size, "Slice{{.axis = {}, .begin = {}, .end = {}}} reaches past samples of shape {}",
                     options_.axis, options_.begin, options_.end, input_shape);
  batch_axis_ = axis;
  std::vector<std::int64_t> dims(input_shape.dims().begin(), input_shape.dims().end());
  dims[static_cast<std::size_t>(axis - 1)] = options_.end - options_.begin;
  return Shape(std::span<const std::int64_t>(dims));
}

Tensor Slice::forward(const Tensor& x) { return ops::slice(x, batch_axis_, options_.begin, options_.end); }

// A new output; its gradient is put into zeros of the input's shape, reading no input.
LayerMemoryUse Slice::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .keeps_input = false, .keeps_output = false};
}

std::string Slice::to_onnx(onnx::Graph& g, const std::string& x) const {
  return g.node("Slice", {x, g.ints({options_.begin}), g.ints({options_.end}), g.ints({batch_axis_})});
}

}  // namespace accrue::layers
