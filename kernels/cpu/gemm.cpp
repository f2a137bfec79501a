// GEMM on the CPU: OpenBLAS's single-threaded sgemm on slices of C, one slice per pool thread.
// Splitting ourselves keeps one thread per core for the whole step and, for the small matrices of
// a training step (64 x 512 x 784), beats OpenBLAS's own threading (measured in bench/).

#include <algorithm>
#include <vector>

#include "cast.hpp"
#include "../../framework/core/half.hpp"
#include "gemm/bf16.hpp"
#include "gemm/openblas.hpp"
#include "parallel.hpp"
#include "gemm/skinny.hpp"
#include "gemm.hpp"

namespace accrue::kernels::cpu {
namespace {

constexpr int row_major = 101, no_trans = 111, trans = 112;

// Below this many multiply-adds a second thread costs more in synchronisation than it saves.
constexpr std::int64_t min_parallel_macs = 1 << 18;

void scale_c(std::int64_t M, std::int64_t N, float beta, float* C, std::int64_t ldc) {
  for (std::int64_t i = 0; i < M; ++i) {
    float* row = C + i * ldc;
    if (beta == 0.0f)
      std::fill(row, row + N, 0.0f);
    else
      for (std::int64_t j = 0; j < N; ++j) row[j] *= beta;
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
          std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    scale_c(M, N, beta, C, ldc);
    return;
  }
  if (skinny_gemm_applies(trans_a, trans_b, M, N, K))
    return skinny_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  const auto sgemm = openblas().sgemm;
  const int ta = trans_a ? trans : no_trans, tb = trans_b ? trans : no_trans;
  auto call = [&](std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1) {
    // Row m of op(A) starts at A + m*lda untransposed, at column m of A transposed; likewise for B.
    const float* a = trans_a ? A + m0 : A + m0 * lda;
    const float* b = trans_b ? B + n0 * ldb : B + n0;
    sgemm(row_major, ta, tb, static_cast<int>(m1 - m0), static_cast<int>(n1 - n0), static_cast<int>(K), alpha, a,
          static_cast<int>(lda), b, static_cast<int>(ldb), beta, C + m0 * ldc + n0, static_cast<int>(ldc));
  };
  const int threads = num_threads();
  if (threads == 1 || M * N * K < min_parallel_macs) {
    call(0, M, 0, N);
    return;
  }
  // Split the longer side of C, in multiples of 16 columns (one AVX-512 register) or 8 rows.
  const bool split_n = N >= M;
  const std::int64_t extent = split_n ? N : M, align = split_n ? 16 : 8;
  const std::int64_t units = (extent + align - 1) / align;
  const int tasks = static_cast<int>(std::min<std::int64_t>(threads, units));
  parallel_tasks(tasks, [&](int t) {
    const std::int64_t begin = std::min(extent, units * t / tasks * align);
    const std::int64_t end = std::min(extent, units * (t + 1) / tasks * align);
    if (begin >= end) return;
    if (split_n)
      call(0, M, begin, end);
    else
      call(begin, end, 0, N);
  });
}

}  // namespace accrue::kernels::cpu

namespace accrue::kernels::cpu {

// float16 and bfloat16 multiplies. bfloat16 runs on the processor's bfloat16 kernel (gemm/bf16.hpp:
// AMX tiles or AVX-512 BF16) where it has one; otherwise the operands are widened to float32
// (exactly) and multiplied by the float32 kernels: float32 accumulation of the low-precision
// products either way. C is rounded once at the end when it is low precision.
std::size_t gemm_low_precision_workspace_bytes(std::int64_t M, std::int64_t N, std::int64_t K, DType low, DType c_type,
                                               bool b_kept) {
  if (K == 0 || M == 0 || N == 0) return 0;
  // Whichever way round gemm_low_precision multiplies (C or C^T), it packs the same two operands.
  if (low == DType::bf16 && bf16_kernel() != Bf16Kernel::none) return bf16_workspace_bytes(M, N, K);
  const bool b_copied = !(b_kept && low == DType::bf16);  // a kept rounded copy exists for bfloat16 only
  return static_cast<std::size_t>(M * K + (b_copied ? K * N : 0) + (c_type != DType::f32 ? M * N : 0)) * 4;
}

namespace {
// n values of type `type` in float32 as `low` holds them: float32 ones rounded to it, low-precision
// ones widened exactly, each in one pass into a buffer left unfilled until written (a zero-filled
// one cost a pass of its own: 8% of the MLP's 16 x 4 epoch under .amp() without a bfloat16
// kernel). A temporary of the allocator's, so memory caps and peaks see it; memory plans count it
// through gemm_low_precision_workspace_bytes.
Tensor widen(const void* src, DType type, DType low, std::int64_t n) {
  Tensor wide = Tensor::empty({n}, {.category = MemoryCategory::temporaries});
  float* out = wide.data<float>();
  if (type != DType::f32) {
    cast(src, type, out, DType::f32, n);
  } else if (low == DType::bf16) {
    round_through_bf16(static_cast<const float*>(src), out, n);
  } else {
    const auto* in = static_cast<const float*>(src);
    parallel_for(n, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i)
        out[i] = common::float_from_f16_bits(common::f16_bits_from_float(in[i]));
    });
  }
  return wide;
}
}  // namespace

void gemm_low_precision(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                        DType low, const void* A, DType a_type, std::int64_t lda, const void* B, DType b_type,
                        std::int64_t ldb, float beta, DType out, void* C, std::int64_t ldc,
                        const float* column_bias, const ParameterOperand* a_param, const ParameterOperand* b_param) {
  if (M == 0 || N == 0) return;
  if (low == DType::bf16 && K > 0 && bf16_kernel() != Bf16Kernel::none) {
    // The packed B holds pairs along K, which for A B^T (a forward pass: B is a weight stored N x K)
    // means a transposing pack, slower than packing A. So the larger of A and B goes first: when the
    // weight is the larger (small batches), compute C^T = B A^T and write C back transposed.
    const bool swap = !trans_a && trans_b && N > M;
    std::optional<Bf16A> fresh_a;
    std::optional<Bf16B> fresh_b;
    const Bf16A& a = swap ? pack_bf16_a(b_param, false, N, K, B, b_type, ldb, fresh_a)
                          : pack_bf16_a(a_param, trans_a, M, K, A, a_type, lda, fresh_a);
    const Bf16B& b = swap ? pack_bf16_b(a_param, true, K, M, A, a_type, lda, fresh_b)
                          : pack_bf16_b(b_param, trans_b, K, N, B, b_type, ldb, fresh_b);
    bf16_gemm(a, b,
              {.C = C, .type = out, .ldc = ldc, .alpha = alpha, .beta = beta, .transposed = swap, .column_bias = column_bias});
    return;
  }
  // A float32 parameter (a master weight) keeps its rounded copy through a window, as packs do.
  const auto widened = [&](const void* src, DType type, const ParameterOperand* param, std::int64_t n,
                           Tensor& fresh) -> const float* {
    if (param != nullptr && type == DType::f32 && low == DType::bf16)
      if (const float* kept = kept_rounded_parameter(*param, static_cast<const float*>(src), n)) return kept;
    fresh = widen(src, type, low, n);
    return fresh.data<float>();
  };
  const std::int64_t a_rows = trans_a ? K : M, b_rows = trans_b ? N : K;
  Tensor a_fresh, b_fresh;
  const float* a = widened(A, a_type, a_param, a_rows * lda, a_fresh);
  const float* b = widened(B, b_type, b_param, b_rows * ldb, b_fresh);
  const auto add_bias = [&](float* c) {
    if (column_bias != nullptr)
      for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) c[i * ldc + j] += column_bias[j];
  };
  if (out == DType::f32) {
    gemm(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, static_cast<float*>(C), ldc);
    add_bias(static_cast<float*>(C));
    return;
  }
  // All of C's rows are widened, so columns beyond N (ldc > N) go back unchanged: the round trip
  // through float32 is exact.
  const Tensor wide_c = widen(C, out, out, M * ldc);
  float* c = wide_c.data<float>();
  gemm(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
  add_bias(c);
  cast(c, DType::f32, C, out, M * ldc);
}

}  // namespace accrue::kernels::cpu
