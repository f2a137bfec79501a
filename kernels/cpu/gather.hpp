#pragma once
// Gather and scatter-add of rows on the CPU (gather.cpp), called by kernels/gather.cpp.

#include <cstdint>

#include "../../framework/core/dtype.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(gather_rows, void(DType dtype, const void* table, const std::int32_t* indices, void* out,
                                    std::int64_t n, std::int64_t D));
ACCRUE_CPU_KERNEL(scatter_add_rows, void(const float* grad, const std::int32_t* indices, float* table_grad,
                                         std::int64_t n, std::int64_t D, std::int64_t skip));

}  // namespace accrue::kernels::cpu
