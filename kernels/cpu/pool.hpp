#pragma once
// The CPU backend's pool functions over raw host memory, called by kernels/pool.cpp;
// defined in kernels/cpu/pool.cpp.

#include "../../framework/core/tensor.hpp"
#include "../common/pool.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(pool2d_forward, void(const float* x, float* y, const Window2d& g, PoolMode mode));
ACCRUE_CPU_KERNEL(pool2d_backward,
                  void(const float* x, const float* dy, float* dx, const Window2d& g, PoolMode mode, bool accumulate));
ACCRUE_CPU_KERNEL(pool2d_forward_bf16,
                  void(const std::uint16_t* x, std::uint16_t* y, const Window2d& g, PoolMode mode));
ACCRUE_CPU_KERNEL(pool2d_backward_bf16, void(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                                             const Window2d& g, PoolMode mode, bool accumulate));

}  // namespace accrue::kernels::cpu
