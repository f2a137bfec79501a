#pragma once
// Matrix products, as the CUDA backend's host functions (gemm.cpp, over cuBLAS), called by kernels/gemm.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>

#include "accrue/framework/dtype.hpp"

namespace accrue::kernels::cuda {

void gemm_f32(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
              const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);
/// A and B both of type `low` (float16 or bfloat16), C float32 or `low`; float32 accumulation on
/// tensor cores.
void gemm_low_precision(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                        float alpha, DType low, const void* A, std::int64_t lda, const void* B, std::int64_t ldb,
                        float beta, DType out, void* C, std::int64_t ldc);

}  // namespace accrue::kernels::cuda
