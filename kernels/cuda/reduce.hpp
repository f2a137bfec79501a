#pragma once
// Reductions and the sum of squares of the global norm, as the CUDA backend's host functions (reduce.cu), called by kernels/reduce.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>
#include <span>

#include "../../framework/core/dtype.hpp"
#include "../common/broadcast.hpp"

namespace accrue::kernels::cuda {

/// Partial sums (doubles) sum_dim needs in its scratch: rows split across blocks
/// (common::split_rows), none when each row takes one block.
std::int64_t sum_dim_partials(std::int64_t outer, std::int64_t D, std::int64_t inner);
void sum_dim(int device, DType x_type, const void* x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale,
             float* out, bool accumulate, double* scratch);
void expand_dim(int device, const float* g, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale,
                float* out, bool accumulate);
void sum_to_shape(int device, const float* dy, float* d, std::int64_t d_numel, const common::SumToShapeIndex& index,
                  float scale, bool accumulate);
void argmax_rows(int device, const float* x, std::int64_t rows, std::int64_t C, std::int32_t* out);
/// Blocks of partial sums sum_of_squares needs in its scratch, for tensors of these sizes.
std::int64_t sum_of_squares_partials(std::span<const std::int64_t> sizes);
/// sum of x^2 over all tensors, in double, in a fixed order; waits for the device.
double sum_of_squares(int device, std::span<const float* const> tensors, std::span<const std::int64_t> sizes,
                      double* scratch);

}  // namespace accrue::kernels::cuda
