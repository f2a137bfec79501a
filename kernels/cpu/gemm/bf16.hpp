#pragma once
// bfloat16 GEMM with float32 accumulation (see bf16.cpp): operands packed once into layouts
// both bfloat16 kernels read, AMX tiles or AVX-512 BF16 dot products, float32 results.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "../../../framework/core/tensor.hpp"
#include "../variant.hpp"
#include "bf16_operands.hpp"

namespace accrue::kernels::cpu {

/// K padded as the packs pad it: to 32 where the kernel is AMX, to 2 otherwise.
std::int64_t bf16_padded_k(std::int64_t K);

/// Bytes of the temporaries of one M x N x K bfloat16 product: packed A and B, padded as Bf16A and
/// Bf16B pad them (for memory plans).
std::size_t bf16_workspace_bytes(std::int64_t M, std::int64_t N, std::int64_t K);

/// Bytes of the pack of a K x N operand as B (Bf16B), which are also those of an N x K operand as A
/// (Bf16A): what open parameter packs keep for a weight used that way.
std::size_t bf16_pack_bytes(std::int64_t K, std::int64_t N);

/// The bfloat16 multiply this process runs: AMX tiles where the processor has them and Linux
/// granted their state, else AVX-512 BF16's vdpbf16ps where the processor has it, else none (the
/// callers widen to float32).
enum class Bf16Kernel { none, avx512_bf16, amx };
Bf16Kernel bf16_kernel();
/// Every kernel this processor can run, fastest first (for tests that compare them).
std::vector<Bf16Kernel> bf16_kernels_available();
const char* bf16_kernel_name(Bf16Kernel kernel);

/// op(A) (M x K) packed from float32 (rounded to bfloat16) or bfloat16 `A` with leading dimension
/// lda (A^T stored K x M when `trans`).
Bf16A pack_bf16_a(bool trans, std::int64_t M, std::int64_t K, const void* A, DType dtype, std::int64_t lda);
/// op(B) (K x N) packed likewise (B^T stored N x K when `trans`).
Bf16B pack_bf16_b(bool trans, std::int64_t K, std::int64_t N, const void* B, DType dtype, std::int64_t ldb);
/// The same into packs the caller made (of op(A)'s and op(B)'s sizes).
void pack_bf16(Bf16A& into, bool trans, const void* A, DType dtype, std::int64_t lda);
void pack_bf16(Bf16B& into, bool trans, const void* B, DType dtype, std::int64_t ldb);

/// A GEMM operand that is a parameter. While parameter packs are open (open_parameter_packs), its
/// packed form is kept and reused until its storage's version changes, as the optimizer step's
/// write changes it: within an accumulation window every micro-batch multiplies the same weights.
struct ParameterOperand {
  std::shared_ptr<const void> owner;  // the storage, kept alive so that its address is not reused
  std::uint64_t version;
};

/// `t` as a parameter operand whose pack may be kept: a tensor on storage counted as parameter
/// memory, which is a layer's weight or the detached view backward saved of it, and not an input
/// that asks for its gradient.
std::optional<ParameterOperand> parameter_operand(const Tensor& t);

/// Opens (nestable) and closes the keeping of packed parameters; the last close frees them. Kept
/// packs are counted as parameters' memory (bfloat16 copies of them, or the float32 copies below).
void open_parameter_packs();
void close_parameter_packs();
/// Packs of parameter operands made since the process started; reusing a kept one makes none
/// (for tests).
std::int64_t parameter_packs_made();

/// out[i] = in[i] rounded to bfloat16, as float32: the values a processor without a bfloat16 kernel
/// multiplies in float32 (exact products, float32 sums, like the kernels).
ACCRUE_CPU_KERNEL(round_through_bf16, void(const float* in, float* out, std::int64_t n));

/// For processors without a bfloat16 kernel: the float32 parameter operand `data` (n values)
/// through round_through_bf16, kept while packs are open and reused until the parameter changes;
/// one copy serves every way gemm reads the operand. nullptr while packs are closed.
const float* kept_rounded_parameter(const ParameterOperand& param, const float* data, std::int64_t n);

/// pack_bf16_a or pack_bf16_b, or the kept pack of `param` when packs are open: the result is
/// `fresh` (filled here) or a kept one.
const Bf16A& pack_bf16_a(const ParameterOperand* param, bool trans, std::int64_t M, std::int64_t K, const void* A,
                         DType dtype, std::int64_t lda, std::optional<Bf16A>& fresh);
const Bf16B& pack_bf16_b(const ParameterOperand* param, bool trans, std::int64_t K, std::int64_t N, const void* B,
                         DType dtype, std::int64_t ldb, std::optional<Bf16B>& fresh);

/// Where bf16_gemm writes the M x N product P = A B: C = alpha P + beta C (beta 0: C is not read),
/// C float32 or bfloat16 with leading dimension ldc, or C^T = alpha P + beta C^T when `transposed`;
/// plus column_bias[c] in every column c of C when given, before C is rounded.
struct Bf16Output {
  void* C;
  DType type;
  std::int64_t ldc;
  float alpha = 1.0f, beta = 0.0f;
  bool transposed = false;
  const float* column_bias = nullptr;
  /// row_bias[r] in every row r of C, likewise.
  const float* row_bias = nullptr;
};

/// A B into `out`, split across the pool, by `kernel` (bf16_kernel() unless a test picks one of
/// bf16_kernels_available()). Each 32 x 32 block of the product goes to C while it is in cache.
void bf16_gemm(const Bf16A& a, const Bf16B& b, const Bf16Output& out, Bf16Kernel kernel = bf16_kernel());

}  // namespace accrue::kernels::cpu
