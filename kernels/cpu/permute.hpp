#pragma once
// Permute on the CPU (permute.cpp), called by kernels/permute.cpp.

#include <cstdint>

#include "accrue/framework/dtype.hpp"
#include "accrue/kernels/common/permute.hpp"
#include "accrue/kernels/cpu/variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(permute, void(DType dtype, const void* x, void* y, std::int64_t n, const common::PermuteIndex& index,
                                bool accumulate));

}  // namespace accrue::kernels::cpu
