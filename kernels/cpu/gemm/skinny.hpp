#pragma once
// GEMMs with a small batch dimension, read in place (see skinny.cpp).

#include <cstdint>
#include <vector>

namespace accrue::kernels::cpu {

/// Largest batch dimension the skinny kernels take; above it OpenBLAS's packing pays for itself.
inline constexpr std::int64_t skinny_limit = 256;

/// The kernels' instruction set: AVX-512 where the processor has it, else AVX2 with FMA, else none
/// (OpenBLAS does every multiply).
enum class SkinnyKernel { none, avx2, avx512 };
SkinnyKernel skinny_kernel();
/// Every set this processor can run, the chosen one first (for tests and benchmarks that compare them).
std::vector<SkinnyKernel> skinny_kernels_available();
const char* skinny_kernel_name(SkinnyKernel kernel);

/// Whether skinny_gemm handles this multiply: a processor with a set of kernels, not both operands
/// transposed, and the batch dimension (M for NN and NT, K for TN) at most skinny_limit.
bool skinny_gemm_applies(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K);

/// The deepest TN product (K rows) that skinny_gemm runs on this processor (0: none). There, with
/// alpha = beta = 1, it adds into C row after row, so a product split along K into calls made one
/// after another gives the bits of the whole.
std::int64_t skinny_in_order_depth();

/// Row-major C = alpha op(A) op(B) + beta C (beta = 0 ignores C), split across the pool, by `kernel`
/// (skinny_kernel() unless a test or benchmark picks one of skinny_kernels_available()).
void skinny_gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                 std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                 SkinnyKernel kernel = skinny_kernel());

/// y (M x N) = x (M x K) W^T + bias for W stored N x K (bias: N values, or nullptr), all dense:
/// skinny_gemm(false, true, ...) with the bias added as each value is written, so y takes one pass
/// instead of a fill with the bias and a read back. Only where skinny_gemm_applies(false, true, M, N, K).
void skinny_linear(std::int64_t M, std::int64_t N, std::int64_t K, const float* x, const float* w, const float* bias,
                   float* y, SkinnyKernel kernel = skinny_kernel());

}  // namespace accrue::kernels::cpu
