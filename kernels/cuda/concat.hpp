#pragma once
// copy_columns, as the CUDA backend's host function (concat.cu), called by kernels/concat.cpp with
// raw device pointers; runs on `device`'s compute stream and returns without waiting. Toolkit-free.

#include <cstdint>

#include "../../framework/core/dtype.hpp"
#include "../common/concat.hpp"

namespace accrue::kernels::cuda {

void copy_columns(int device, DType dtype, const void* src, void* dst, std::int64_t rows, const common::ColumnBlock& block,
                  bool accumulate);

}  // namespace accrue::kernels::cuda
