#pragma once
// The CPU backend's cast functions over raw host memory, called by kernels/cast.cpp;
// defined in kernels/cpu/cast.cpp.

#include "../../framework/core/tensor.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(cast, void(const void* src, DType from, void* dst, DType to, std::int64_t n));

}  // namespace accrue::kernels::cpu
