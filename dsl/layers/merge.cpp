#include "merge.hpp"

#include <limits>

#include "../../framework/ops/ops.hpp"
#include "../layer_registry.hpp"
#include "../onnx.hpp"
#include "batch_axis.hpp"

namespace accrue::layers {

namespace {
// The shape samples of `a` and `b` broadcast to, NumPy's way (aligned from the last axis, a size
// of 1 stretching); none when they do not fit.
std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    dims[static_cast<std::size_t>(i)] = std::max(da, db);
  }
  return Shape(std::span<const std::int64_t>(dims));
}

std::string shapes_list(const std::vector<Shape>& shapes) {
  std::vector<std::string> each;
  for (const Shape& s : shapes) each.push_back(s.str());
  return fmt::format("{}", fmt::join(each, ", "));
}
}  // namespace

ElementwiseMerge::ElementwiseMerge(const MergeOptions& options, Combine combine, const char* onnx_op)
    : combine_(combine), onnx_op_(onnx_op) {
  set_name(options.name);
}

// Average folds a sum (and divides in forward); Sum, Mean, Max and Min take any number of inputs.
Add::Add(MergeOptions options) : LayerBase(options, ops::add, "Sum") {}
Subtract::Subtract(MergeOptions options) : LayerBase(options, ops::sub, "Sub") {}
Multiply::Multiply(MergeOptions options) : LayerBase(options, ops::mul, "Mul") {}
Average::Average(MergeOptions options) : LayerBase(options, ops::add, "Mean") {}
Maximum::Maximum(MergeOptions options) : LayerBase(options, ops::maximum, "Max") {}
Minimum::Minimum(MergeOptions options) : LayerBase(options, ops::minimum, "Min") {}

InputCount ElementwiseMerge::input_count() const { return {2, std::numeric_limits<std::size_t>::max()}; }

Shape ElementwiseMerge::build(const std::vector<Shape>& input_shapes, Generator& /*generator*/) {
  Shape out = input_shapes.front();
  for (std::size_t i = 1; i < input_shapes.size(); ++i) {
    const std::optional<Shape> both = broadcast(out, input_shapes[i]);
    ACCRUE_CHECK_SHAPE(both.has_value(),
                       "{} merges inputs of one shape (or shapes that broadcast together), not samples of shapes {}",
                       type_name(), shapes_list(input_shapes));
    out = *both;
  }
  return out;
}

Tensor ElementwiseMerge::forward(const std::vector<Tensor>& xs) {
  Tensor out = combine_(xs[0], xs[1]);
  for (std::size_t i = 2; i < xs.size(); ++i) out = combine_(out, xs[i]);
  return out;
}

std::string ElementwiseMerge::to_onnx_inputs(onnx::Graph& graph, const std::vector<std::string>& xs) const {
  return graph.node(onnx_op_, xs);
}

// A new output of the broadcast shape; the gradients of Multiply, Maximum and Minimum read their
// inputs (kept), Add's and Subtract's nothing, Average's its sum.
LayerMemoryUse ElementwiseMerge::memory_use(const LayerMemoryQuery& q) const {
  const bool reads_inputs = type_name() == "Multiply" || type_name() == "Maximum" || type_name() == "Minimum";
  return {.keeps_input = reads_inputs,
          .keeps_output = false,
          .kept_other = type_name() == "Average" ? q.bytes(output_shape(), DType::f32) : 0};
}

// The sum divided (not multiplied by 1/n), as Keras and (a + b + c) / 3 in PyTorch round it.
Tensor Average::forward(const std::vector<Tensor>& xs) {
  const Tensor sum = ElementwiseMerge::forward(xs);
  return ops::div(sum, Tensor::scalar(static_cast<float>(xs.size()), {.device = sum.device()}));
}

Concatenate::Concatenate(ConcatenateOptions options) : options_(std::move(options)) { set_name(options_.name); }

LayerConfig Concatenate::config() const { return {{"axis", std::int64_t{options_.axis}}}; }

Concatenate Concatenate::from_config(const ConfigReader& c) {
  return Concatenate({.axis = static_cast<int>(c.integer("axis"))});
}

InputCount Concatenate::input_count() const { return {2, std::numeric_limits<std::size_t>::max()}; }

Shape Concatenate::build(const std::vector<Shape>& input_shapes, Generator& /*generator*/) {
  const Shape& first = input_shapes.front();
  const int axis =
      detail::batch_axis(options_.axis, first, fmt::format("Concatenate{{.axis = {}}}", options_.axis), "joins along");
  std::vector<std::int64_t> dims(first.dims().begin(), first.dims().end());
  const auto at = static_cast<std::size_t>(axis - 1);
  for (std::size_t i = 1; i < input_shapes.size(); ++i) {
    const Shape& s = input_shapes[i];
    bool fits = s.rank() == first.rank();
    for (int d = 0; fits && d < s.rank(); ++d) fits = d == axis - 1 || s[d] == first[d];
    ACCRUE_CHECK_SHAPE(fits, "Concatenate{{.axis = {}}} needs inputs of one shape except along that axis, not samples of shapes {}",
                       options_.axis, shapes_list(input_shapes));
    dims[at] += s[axis - 1];
  }
  batch_axis_ = axis;
  return Shape(std::span<const std::int64_t>(dims));
}

Tensor Concatenate::forward(const std::vector<Tensor>& xs) { return ops::cat(xs, batch_axis_); }

std::string Concatenate::to_onnx_inputs(onnx::Graph& graph, const std::vector<std::string>& xs) const {
  return graph.node("Concat", xs, {{"axis", std::int64_t{batch_axis_}}});
}

// A new output; its gradient is cut from the output's, reading no input.
LayerMemoryUse Concatenate::memory_use(const LayerMemoryQuery& /*q*/) const {
  return {.keeps_input = false, .keeps_output = false};
}

}  // namespace accrue::layers
