#pragma once
// Permute, as the CUDA backend's host function (permute.cu), called by kernels/permute.cpp with raw
// device pointers. Runs on `device`'s compute stream and returns without waiting. Toolkit-free, so
// any file may include it.

#include <cstdint>

#include "../../framework/core/dtype.hpp"
#include "../common/permute.hpp"

namespace accrue::kernels::cuda {

void permute(int device, DType dtype, const void* x, void* y, std::int64_t n, const common::PermuteIndex& index,
             bool accumulate);

}  // namespace accrue::kernels::cuda
