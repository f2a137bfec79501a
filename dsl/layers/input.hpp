#pragma once
// A model's input. At the head of a Sequential it declares the shape of one sample, so the model
// is built (parameters created, summary() complete) before it sees data:
// `Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, ...}`. In a functional model (model.hpp)
// it is the first symbol, which layers are called on: `layers::Input image{{1, 28, 28}, {.name =
// "image"}}; auto x = layers::Flatten{}(image);`.

#include <initializer_list>
#include <string>

#include "../../framework/core/dtype.hpp"
#include "../../framework/core/shape.hpp"
#include "../symbol.hpp"

namespace accrue::layers {

struct InputOptions {
  /// The input's name, which a model's data names too (a dataset's column group, an ONNX input);
  /// unnamed inputs are named "input", "input_1", ... by the model.
  std::string name;
  /// int32 for token ids (Embedding's input); float32 otherwise.
  DType dtype = DType::f32;
};

class Input : public Symbol {
 public:
  Input(std::initializer_list<std::int64_t> dims) : Input(Shape(dims)) {}
  explicit Input(Shape sample_shape, InputOptions options = {});

  /// The shape of one sample.
  const Shape& sample_shape() const { return shape(); }
  const std::string& name() const;
};

}  // namespace accrue::layers
