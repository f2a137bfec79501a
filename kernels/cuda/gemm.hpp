#pragma once
// Matrix products, as the CUDA backend's host functions (gemm.cpp, over cuBLAS), called by kernels/gemm.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>

#include "../../framework/core/dtype.hpp"

namespace accrue::kernels::cuda {

void gemm_f32(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
              const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);
/// `batch` float32 products C_i = alpha op(A_i) op(B_i) + beta C_i with A_i = A + i stride_a, and
/// so on (cublasSgemmStridedBatched): attention's heads in one call.
void gemm_f32_strided_batched(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                              float alpha, const float* A, std::int64_t lda, std::int64_t stride_a, const float* B,
                              std::int64_t ldb, std::int64_t stride_b, float beta, float* C, std::int64_t ldc,
                              std::int64_t stride_c, std::int64_t batch);
/// A and B both of type `low` (float16 or bfloat16), C float32 or `low`; float32 accumulation on
/// tensor cores.
void gemm_low_precision(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                        float alpha, DType low, const void* A, std::int64_t lda, const void* B, std::int64_t ldb,
                        float beta, DType out, void* C, std::int64_t ldc);

}  // namespace accrue::kernels::cuda
