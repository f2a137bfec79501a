#pragma once
// Inverted dropout: keep an element with probability 1 - p and scale it by 1 / (1 - p). The mask
// comes from Philox at (seed, offset), so backward regenerates it instead of storing it: no
// activation memory for masks, and the same mask on the CPU and a GPU.

#include <cstdint>

#include "../../framework/core/philox.hpp"

namespace accrue::kernels::common {

/// The factor element i is multiplied by: 0 when dropped, 1 / (1 - p) when kept.
ACCRUE_HD float dropout_factor(std::uint64_t seed, std::uint64_t offset, std::uint64_t i, float p, float scale) {
  return uniform_from_bits(philox_bits(seed, offset, i)) < p ? 0.0f : scale;
}

}  // namespace accrue::kernels::common
