#pragma once
// Gather and scatter-add of rows on the CPU (gather.cpp), called by kernels/gather.cpp.

#include <cstdint>

#include "accrue/framework/dtype.hpp"

namespace accrue::kernels::cpu {

void gather_rows(DType dtype, const void* table, const std::int32_t* indices, void* out, std::int64_t n, std::int64_t D);
void scatter_add_rows(const float* grad, const std::int32_t* indices, float* table_grad, std::int64_t n, std::int64_t D,
                      std::int64_t skip);

}  // namespace accrue::kernels::cpu
