#pragma once
// Permute on the CPU (permute.cpp), called by kernels/permute.cpp.

#include <cstdint>

#include "../../framework/core/dtype.hpp"
#include "../common/permute.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(permute, void(DType dtype, const void* x, void* y, std::int64_t n, const common::PermuteIndex& index,
                                bool accumulate));

}  // namespace accrue::kernels::cpu
