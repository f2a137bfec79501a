#pragma once
// Declares the shape of one input sample at the head of a Sequential, so the model is built
// (parameters created, summary() complete) before it sees data: `layers::Input{1, 28, 28}`.

#include <initializer_list>

#include "../../framework/core/shape.hpp"

namespace accrue::layers {

struct Input {
  Input(std::initializer_list<std::int64_t> dims) : shape(dims) {}
  explicit Input(Shape sample_shape) : shape(sample_shape) {}
  Shape shape;
};

}  // namespace accrue::layers
