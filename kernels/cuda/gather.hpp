#pragma once
// Gather and scatter-add of rows, as the CUDA backend's host functions (gather.cu), called by
// kernels/gather.cpp with raw device pointers. Each runs on `device`'s compute stream and returns
// without waiting. Toolkit-free, so any file may include it.

#include <cstdint>

#include "../../framework/core/dtype.hpp"

namespace accrue::kernels::cuda {

void gather_rows(int device, DType dtype, const void* table, const std::int32_t* indices, void* out, std::int64_t n,
                 std::int64_t D);
/// With atomic adds: repeated indices add up in an order that may change from run to run.
void scatter_add_rows(int device, const float* grad, const std::int32_t* indices, float* table_grad, std::int64_t n,
                      std::int64_t D, std::int64_t skip);

}  // namespace accrue::kernels::cuda
