#pragma once
// copy_columns on the CPU (concat.cpp), called by kernels/concat.cpp.

#include <cstdint>

#include "../../framework/core/dtype.hpp"
#include "../common/concat.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

ACCRUE_CPU_KERNEL(copy_columns, void(DType dtype, const void* src, void* dst, std::int64_t rows,
                                     const common::ColumnBlock& block, bool accumulate));

}  // namespace accrue::kernels::cpu
