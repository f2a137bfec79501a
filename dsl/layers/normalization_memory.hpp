#pragma once
// What batch, group and layer normalization hold in training, for their Layer::memory_use.

#include "../layer.hpp"

namespace accrue::layers {

/// They compute in float32 (a low-precision input is converted, and the copy is what they keep),
/// keep their input and each of `sets` sets' mean and 1/std, and in backward allocate the
/// gradients of their `affine_elements` scales and shifts and, for a converted input, the float32
/// gradient of the copy before it is converted back.
inline LayerMemoryUse normalization_memory_use(const LayerMemoryQuery& q, std::int64_t sets,
                                               std::int64_t affine_elements) {
  const bool converts = q.input_dtype != DType::f32;
  const std::size_t copy = converts ? q.bytes(q.input_shape, DType::f32) : 0;
  return {.output_dtype = DType::f32,
          .keeps_input = !converts,
          .keeps_output = false,
          .kept_other = copy + static_cast<std::size_t>(2 * sets) * 4,
          .backward_scratch = static_cast<std::size_t>(2 * affine_elements) * 4,
          .input_gradient_scratch = copy + static_cast<std::size_t>(2 * affine_elements) * 4};
}

}  // namespace accrue::layers
