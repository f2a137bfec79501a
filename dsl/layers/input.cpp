#include "input.hpp"

#include "../../framework/core/error.hpp"

namespace accrue::layers {

Input::Input(Shape sample_shape, InputOptions options) {
  ACCRUE_CHECK_SHAPE(sample_shape.numel() > 0, "layers::Input{{{}}}: a sample needs at least one value", sample_shape);
  ACCRUE_CHECK(options.dtype == DType::f32 || options.dtype == DType::i32,
               "layers::Input '{}': inputs are float32 or int32 (token ids), not {}", options.name, dtype_name(options.dtype));
  auto node = std::make_shared<detail::SymbolNode>();
  node->shape = sample_shape;
  node->dtype = options.dtype;
  node->input_name = std::move(options.name);
  node_ = std::move(node);
}

const std::string& Input::name() const { return node_->input_name; }

}  // namespace accrue::layers
