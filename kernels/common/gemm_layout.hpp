#pragma once
// Accrue's matrices are row-major; cuBLAS's are column-major. A row-major (M, N) matrix C is the
// column-major (N, M) matrix C^T, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: the
// operands swap and keep their transpose flags. Host-only, kept here so CPU tests check it.

#include <cstdint>

namespace accrue::kernels::common {

/// Arguments of a column-major gemm C = op(first) op(second), C of m rows and n columns.
struct ColumnMajorGemm {
  bool trans_first, trans_second;
  std::int64_t m, n, k;
  const void* first;
  std::int64_t ld_first;
  const void* second;
  std::int64_t ld_second;
  void* c;
  std::int64_t ldc;
};

/// What C = alpha op(A) op(B) + beta C comes to when a dimension is 0: nothing (C has no element,
/// or K = 0 and beta = 1), C set to zero (K = 0, beta = 0), C scaled by beta (K = 0), or a GEMM.
/// cuBLAS refuses k = 0, so the CUDA backend checks this first; the CPU's does the same.
enum class GemmWork { nothing, zero_c, scale_c, gemm };
inline GemmWork gemm_work(std::int64_t M, std::int64_t N, std::int64_t K, float beta) {
  if (M == 0 || N == 0) return GemmWork::nothing;
  if (K != 0) return GemmWork::gemm;
  return beta == 1.0f ? GemmWork::nothing : beta == 0.0f ? GemmWork::zero_c : GemmWork::scale_c;
}

inline ColumnMajorGemm column_major_gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                                         const void* A, std::int64_t lda, const void* B, std::int64_t ldb, void* C,
                                         std::int64_t ldc) {
  return ColumnMajorGemm{trans_b, trans_a, N, M, K, B, ldb, A, lda, C, ldc};
}

}  // namespace accrue::kernels::common
