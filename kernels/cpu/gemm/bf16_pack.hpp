#pragma once
// The bfloat16 GEMM's packing loops, compiled per instruction set (bf16_pack.cpp); bf16.cpp calls
// them.

#include <cstdint>

#include "../variant.hpp"
#include "bf16_operands.hpp"

namespace accrue::kernels::cpu {

/// op(A), float32 (rounded to bfloat16 here, as autocast rounds its inputs) or bfloat16 bits, into
/// the rows of `into` (pack_bf16's body).
ACCRUE_CPU_KERNEL(pack_bf16_rows, void(Bf16A& into, bool trans, const void* A, DType dtype, std::int64_t lda));
/// op(B) into the pairs along K of `into`, likewise.
ACCRUE_CPU_KERNEL(pack_bf16_pairs, void(Bf16B& into, bool trans, const void* B, DType dtype, std::int64_t ldb));
}  // namespace accrue::kernels::cpu
