#pragma once
// The CPU backend's dropout functions over raw host memory, called by kernels/dropout.cpp;
// defined in kernels/cpu/dropout.cpp.

#include <cstdint>

#include "../../framework/core/tensor.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

/// out (+)= in * mask over any float storage type.
ACCRUE_CPU_KERNEL(dropout_apply, void(DType dtype, const void* in, void* out, std::int64_t n, float p,
                                      std::uint64_t seed, std::uint64_t offset, bool accumulate));

}  // namespace accrue::kernels::cpu
