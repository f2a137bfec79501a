#pragma once
// General matrix multiply, the arithmetic of Dense layers.

#include <string>

#include "../framework/core/non_copyable.hpp"
#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

/// C = alpha op(A) op(B) + beta C over row-major matrices, where op transposes when asked:
/// op(A) is (M, K), op(B) is (K, N), C is (M, N). With beta = 0, C's old contents are ignored
/// (NaN included), so C may be uninitialised. Tensors of rank > 2 are read as 2-D by folding all
/// leading dimensions into rows.
///
/// `compute` float32: A, B and C are float32. `compute` float16 or bfloat16: A and B are each
/// float32 or that type, float32 ones rounded to it as autocast rounds its inputs (so float32 master
/// weights need no low-precision copy), multiplied with float32 accumulation; C is float32 or that
/// type (rounded once, at the store).
void gemm(bool trans_a, bool trans_b, float alpha, const Tensor& A, const Tensor& B, float beta, const Tensor& C,
          DType compute = DType::f32);

/// The deepest float32 product gemm(true, false, 1, A, B, 1, C) on `device` adds into C in order, row
/// of K after row (0: none): up to that depth, a product split along K into calls made one after
/// another gives the bits of one call over all of K.
std::int64_t gemm_in_order_depth(Device device);

/// y = x W^T + bias (bias undefined: none) computed in `compute`, y of that type: linear's
/// forward. Under float16 or bfloat16 x and W are float32 or `compute` as gemm takes them, and the
/// bias (float32) joins before the one rounding into y. On the CPU the bias is added as each value
/// of the product is written, in one pass, with the bits of a fill with the bias followed by
/// gemm(..., beta = 1); on a GPU it is that fill and gemm (through a float32 accumulator for the
/// low-precision types).
void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, DType compute);

/// While one lives, the CPU's bfloat16 GEMMs keep the packed form of each parameter they multiply
/// (a tensor whose storage is counted as parameter memory) and reuse it until the parameter is written in place: fit
/// holds one while it accumulates, so that the micro-batches of a window pack each weight once
/// instead of once each. The packs count as parameters' memory (a bfloat16 copy of each weight
/// per layout used: forward, and backward to the input). Nestable; elsewhere a no-op.
class PackedParameters : NonCopyable {
 public:
  PackedParameters();
  ~PackedParameters();
};

/// Bytes a PackedParameters keeps on `device` for a parameter that gemm multiplies in `compute` as
/// a K x N operand (or its N x K transpose): a bfloat16 pack on a CPU with a bfloat16 kernel, a
/// float32 copy rounded to bfloat16 on one without, else 0. `another_layout`: what reading the same
/// parameter another way adds (a second pack; nothing for the copy, which serves both).
std::size_t gemm_kept_parameter_bytes(Device device, DType compute, std::int64_t K, std::int64_t N,
                                      bool another_layout = false);

/// How gemm multiplies in float16 or bfloat16 `compute` on `device`, for the training banner: the
/// CPU's bfloat16 kernel (AMX tiles, AVX-512 BF16), or float32 on rounded operands where it has
/// none (no faster than float32), or cuBLAS.
std::string gemm_low_precision_engine(Device device, DType compute);
/// Whether `device` multiplies in `compute` with arithmetic of that type (a GPU, or a CPU with AMX
/// or AVX-512 BF16): false where the products run in float32 on rounded operands, which is slower
/// than float32 itself.
bool gemm_low_precision_native(Device device, DType compute);

/// gemm over `batch` matrices: A, B and C each hold `batch` matrices one after another (their
/// leading dimensions folded), and C[i] = alpha op(A[i]) op(B[i]) + beta C[i] with each matrix's
/// shape taken from the tensors' last two dimensions. Operands' dtypes as gemm.
void gemm_batched(bool trans_a, bool trans_b, float alpha, const Tensor& A, const Tensor& B, float beta, const Tensor& C,
                  std::int64_t batch, DType compute = DType::f32);

/// Bytes of temporaries gemm() allocates on `device` for an M x N x K product of operands of types
/// a_type and b_type into C of type c_type, computed in `compute` (transposed or not, the same):
/// the packed operands of the CPU's bfloat16 kernels; on a CPU without one, the float32 copies of
/// A, of B unless `b_kept` (a parameter whose rounded copy training keeps through the window, which
/// gemm_kept_parameter_bytes counts) and of a low-precision C; the rounded copies of float32
/// operands for cuBLAS; 0 for float32. For memory plans.
std::size_t gemm_workspace_bytes(Device device, DType compute, std::int64_t M, std::int64_t N, std::int64_t K,
                                 DType a_type, DType b_type, DType c_type, bool b_kept);

}  // namespace accrue::kernels
