#pragma once
// Dropout, as the CUDA backend's host functions (dropout.cu), called by kernels/dropout.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>

#include "../../framework/core/dtype.hpp"

namespace accrue::kernels::cuda {

void dropout_apply(int device, DType dtype, const void* in, void* out, std::int64_t n, float p, std::uint64_t seed,
                   std::uint64_t offset, bool accumulate);

}  // namespace accrue::kernels::cuda
