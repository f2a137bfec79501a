#pragma once
// The loss scaler's pass over gradients (math in common/amp_update.hpp).

#include <span>

#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

/// g *= inverse_scale for every float32 gradient (all on one device); true when any element is inf
/// or NaN. One pass over each tensor on the CPU; one launch for all of them on a GPU.
bool unscale_and_check(std::span<const Tensor> grads, float inverse_scale);
/// The same for one gradient.
bool unscale_and_check(const Tensor& g, float inverse_scale);

}  // namespace accrue::kernels
