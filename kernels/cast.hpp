#pragma once
// Conversion between floating-point dtypes: float32 to and from float16 and bfloat16, rounding to
// nearest even (math in framework/core/half.hpp).

#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

/// dst = src converted element by element (same number of elements; float dtypes).
void cast(const Tensor& src, const Tensor& dst);

}  // namespace accrue::kernels
