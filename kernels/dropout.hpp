#pragma once
// Dropout with a mask regenerated from its seed in backward (see common/dropout.hpp).

#include <cstdint>

#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

/// y = x * mask(seed, offset) with drop probability p in [0, 1).
void dropout_forward(const Tensor& x, const Tensor& y, float p, std::uint64_t seed, std::uint64_t offset);
/// dx (+)= dy * mask(seed, offset), the same mask as forward.
void dropout_backward(const Tensor& dy, const Tensor& dx, float p, std::uint64_t seed, std::uint64_t offset,
                      bool accumulate);

}  // namespace accrue::kernels
