#pragma once
// Conversions between floating-point types, as the CUDA backend's host functions (cast.cu), called by kernels/cast.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>

#include "../../framework/core/dtype.hpp"

namespace accrue::kernels::cuda {

void cast(int device, const void* src, DType from, void* dst, DType to, std::int64_t n);

}  // namespace accrue::kernels::cuda
