#pragma once
// The CPU backend's amp update functions over raw host memory, called by kernels/amp_update.cpp;
// defined in kernels/cpu/amp_update.cpp.

#include <span>

#include "../../framework/core/tensor.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(unscale_and_check, bool(float* g, std::int64_t n, float inverse_scale));

}  // namespace accrue::kernels::cpu
