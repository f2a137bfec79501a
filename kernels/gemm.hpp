#pragma once
// General matrix multiply, the arithmetic of Dense layers.

#include "accrue/framework/tensor.hpp"

namespace accrue::kernels {

/// C = alpha op(A) op(B) + beta C over row-major float32 matrices, where op transposes when asked:
/// op(A) is (M, K), op(B) is (K, N), C is (M, N). With beta = 0, C's old contents are ignored
/// (NaN included), so C may be uninitialised. Tensors of rank > 2 are read as 2-D by folding all
/// leading dimensions into rows.
void gemm(bool trans_a, bool trans_b, float alpha, const Tensor& A, const Tensor& B, float beta, const Tensor& C);

namespace cpu {
/// Row-major sgemm with leading dimensions, split across the CPU thread pool.
void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
          std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);
}  // namespace cpu

}  // namespace accrue::kernels
