// GEMM over cuBLAS: float32 with cublasSgemm, float16 and bfloat16 with cublasGemmEx and float32
// accumulation (tensor cores). Row-major operands map to cuBLAS's column-major convention by
// common::column_major_gemm.

#include <climits>

#include "../common/gemm_layout.hpp"
#include "check.hpp"
#include "context.hpp"
#include "gemm.hpp"

namespace accrue::kernels::cuda {
namespace {

int as_int(std::int64_t v, const char* what) {
  if (v > INT_MAX)
    throw_error(CUBLAS_STATUS_NOT_SUPPORTED, what, __FILE__, __LINE__);
  return static_cast<int>(v);
}

cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::i32: break;
  }
  throw_error(CUBLAS_STATUS_NOT_SUPPORTED, "gemm on int32 operands", __FILE__, __LINE__);
}

// The cases cuBLAS refuses (k = 0) or that need no call: true when C is done.
bool without_products(int device, std::int64_t M, std::int64_t N, std::int64_t K, float beta, DType c_type, void* C,
                      std::int64_t ldc) {
  const std::size_t width = dtype_size(c_type);
  switch (common::gemm_work(M, N, K, beta)) {
    case common::GemmWork::gemm: return false;
    case common::GemmWork::nothing: return true;
    case common::GemmWork::zero_c:  // rows of N elements, ldc apart: zero bits are 0.0 in every float type
      ACCRUE_CUDA_CHECK(cudaMemset2DAsync(C, static_cast<std::size_t>(ldc) * width, 0, static_cast<std::size_t>(N) * width,
                                          static_cast<std::size_t>(M), compute_stream(device)));
      return true;
    case common::GemmWork::scale_c: {
      if (c_type != DType::f32) throw_error(CUBLAS_STATUS_NOT_SUPPORTED, "gemm with K = 0 and beta other than 0 or 1 on a low-precision C", __FILE__, __LINE__);
      // Column-major, C^T is (N, M) with leading dimension ldc; geam scales it in place.
      const float zero = 0.0f;
      float* c = static_cast<float*>(C);
      const int n = as_int(N, "gemm with more than 2^31 columns"), m = as_int(M, "gemm with more than 2^31 rows"),
                ld = as_int(ldc, "gemm leading dimension");
      ACCRUE_CUDA_CHECK(cublasSgeam(context(device).cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, &beta, c, ld, &zero, c, ld, c, ld));
      return true;
    }
  }
  return false;
}

}  // namespace

void gemm_f32(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
              const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  if (without_products(device, M, N, K, beta, DType::f32, C, ldc)) return;
  const auto g = common::column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
  ACCRUE_CUDA_CHECK(cublasSgemm(context(device).cublas, op(g.trans_first), op(g.trans_second),
                                as_int(g.m, "gemm with more than 2^31 rows"), as_int(g.n, "gemm with more than 2^31 columns"),
                                as_int(g.k, "gemm with an inner dimension above 2^31"), &alpha,
                                static_cast<const float*>(g.first), as_int(g.ld_first, "gemm leading dimension"),
                                static_cast<const float*>(g.second), as_int(g.ld_second, "gemm leading dimension"), &beta,
                                static_cast<float*>(g.c), as_int(g.ldc, "gemm leading dimension")));
}

void gemm_f32_strided_batched(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                              float alpha, const float* A, std::int64_t lda, std::int64_t stride_a, const float* B,
                              std::int64_t ldb, std::int64_t stride_b, float beta, float* C, std::int64_t ldc,
                              std::int64_t stride_c, std::int64_t batch) {
  if (batch == 0) return;
  if (common::gemm_work(M, N, K, beta) != common::GemmWork::gemm) {
    for (std::int64_t i = 0; i < batch; ++i)
      without_products(device, M, N, K, beta, DType::f32, C + i * stride_c, ldc);
    return;
  }
  // The operands swap for the column-major call (see gemm_layout.hpp), and so do their strides.
  const auto g = common::column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
  ACCRUE_CUDA_CHECK(cublasSgemmStridedBatched(
      context(device).cublas, op(g.trans_first), op(g.trans_second), as_int(g.m, "gemm with more than 2^31 rows"),
      as_int(g.n, "gemm with more than 2^31 columns"), as_int(g.k, "gemm with an inner dimension above 2^31"), &alpha,
      static_cast<const float*>(g.first), as_int(g.ld_first, "gemm leading dimension"), stride_b,
      static_cast<const float*>(g.second), as_int(g.ld_second, "gemm leading dimension"), stride_a, &beta,
      static_cast<float*>(g.c), as_int(g.ldc, "gemm leading dimension"), stride_c,
      as_int(batch, "a batched gemm of more than 2^31 matrices")));
}

void gemm_low_precision(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                        float alpha, DType low, const void* A, std::int64_t lda, const void* B, std::int64_t ldb,
                        float beta, DType out, void* C, std::int64_t ldc) {
  if (without_products(device, M, N, K, beta, out, C, ldc)) return;
  const auto g = common::column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
  ACCRUE_CUDA_CHECK(cublasGemmEx(context(device).cublas, op(g.trans_first), op(g.trans_second),
                                 as_int(g.m, "gemm with more than 2^31 rows"),
                                 as_int(g.n, "gemm with more than 2^31 columns"),
                                 as_int(g.k, "gemm with an inner dimension above 2^31"), &alpha, g.first, cuda_type(low),
                                 as_int(g.ld_first, "gemm leading dimension"), g.second, cuda_type(low),
                                 as_int(g.ld_second, "gemm leading dimension"), &beta, g.c, cuda_type(out),
                                 as_int(g.ldc, "gemm leading dimension"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace accrue::kernels::cuda
