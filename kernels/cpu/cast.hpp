#pragma once
// The CPU backend's cast functions over raw host memory, called by kernels/cast.cpp;
// defined in kernels/cpu/cast.cpp.

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/cast.hpp"

namespace accrue::kernels::cpu {

void cast(const void* src, DType from, void* dst, DType to, std::int64_t n);

}  // namespace accrue::kernels::cpu
