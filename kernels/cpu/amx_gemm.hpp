#pragma once
// bfloat16 GEMM on AMX tiles (see amx_gemm.cpp): operands packed into tile layouts, float32 results.

#include <cstdint>
#include <vector>

#include "accrue/framework/tensor.hpp"

namespace accrue::kernels::cpu {

/// Rows and columns of one tile of C.
inline constexpr std::int64_t amx_block = 16;

/// A packed as bfloat16 rows along K: Mp x Kp, padded with zeros (Mp to 16, Kp to 32). The buffer
/// comes from the CPU allocator (reused between calls, counted as temporaries).
struct AmxA {
  AmxA(std::int64_t M, std::int64_t K);
  std::int64_t M, K, Mp, Kp;
  Tensor buffer;
  std::uint16_t* data;
};

/// B packed as pairs along K: (Kp / 2) x Np x 2, padded with zeros (Kp to 32, Np to 16).
struct AmxB {
  AmxB(std::int64_t K, std::int64_t N);
  std::int64_t K, N, Kp, Np;
  Tensor buffer;
  std::uint16_t* data;
};

/// Bytes of the temporaries of one M x N x K AMX product: packed A and B and the float32 Mp x Np
/// result, padded as AmxA, AmxB and amx_gemm pad them (for memory plans).
std::size_t amx_workspace_bytes(std::int64_t M, std::int64_t N, std::int64_t K);

/// Whether this process can run AMX bfloat16 (the processor has it and Linux granted the state).
bool amx_available();

/// op(A) (M x K) packed from float32 (rounded to bfloat16) or bfloat16 `A` with leading dimension
/// lda (A^T stored K x M when `trans`).
AmxA pack_amx_a(bool trans, std::int64_t M, std::int64_t K, const void* A, DType dtype, std::int64_t lda);
/// op(B) (K x N) packed likewise (B^T stored N x K when `trans`).
AmxB pack_amx_b(bool trans, std::int64_t K, std::int64_t N, const void* B, DType dtype, std::int64_t ldb);

/// acc (a.Mp x b.Np float32, leading dimension b.Np) = A B, split across the pool.
void amx_gemm(const AmxA& a, const AmxB& b, float* acc);

}  // namespace accrue::kernels::cpu
