#pragma once
// The CPU backend's gemm functions over raw host memory, called by kernels/gemm.cpp;
// defined in kernels/cpu/gemm.cpp.

#include "../../framework/core/tensor.hpp"
#include "gemm/bf16.hpp"

namespace accrue::kernels::cpu {

/// Row-major sgemm with leading dimensions, split across the CPU thread pool.
void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
          std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);
/// The same computed in `low` (float16 or bfloat16): A and B each of type a_type / b_type (float32
/// or `low`), C of type `out` (float32 or `low`). column_bias (N float32 values), when given, is
/// added to every row of C before it is rounded. a_param / b_param, when given, say that operand
/// is a parameter whose bfloat16 pack may be kept (see open_parameter_packs in gemm/bf16.hpp).
void gemm_low_precision(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                        DType low, const void* A, DType a_type, std::int64_t lda, const void* B, DType b_type,
                        std::int64_t ldb, float beta, DType out, void* C, std::int64_t ldc,
                        const float* column_bias = nullptr, const ParameterOperand* a_param = nullptr,
                        const ParameterOperand* b_param = nullptr);
/// The temporaries gemm_low_precision allocates for an M x N x K product (transposed or not, and
/// whichever way round it multiplies, the same): with a bfloat16 kernel, the packs of both
/// operands; without one, the float32 copies it multiplies: A's, B's unless `b_kept` (a float32
/// parameter whose rounded copy is kept through the window), and C's when C is of type `c_type`
/// other than float32.
std::size_t gemm_low_precision_workspace_bytes(std::int64_t M, std::int64_t N, std::int64_t K, DType low, DType c_type,
                                               bool b_kept);

}  // namespace accrue::kernels::cpu
