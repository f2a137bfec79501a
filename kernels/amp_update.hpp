#pragma once
// The loss scaler's pass over gradients (math in common/amp_update.hpp).

#include "accrue/framework/tensor.hpp"

namespace accrue::kernels {

/// g *= inverse_scale for a float32 gradient; true when any element is inf or NaN.
bool unscale_and_check(const Tensor& g, float inverse_scale);

namespace cpu {
bool unscale_and_check(float* g, std::int64_t n, float inverse_scale);
}  // namespace cpu

}  // namespace accrue::kernels
