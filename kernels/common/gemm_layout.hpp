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

inline ColumnMajorGemm column_major_gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                                         const void* A, std::int64_t lda, const void* B, std::int64_t ldb, void* C,
                                         std::int64_t ldc) {
  return ColumnMajorGemm{trans_b, trans_a, N, M, K, B, ldb, A, lda, C, ldc};
}

}  // namespace accrue::kernels::common
