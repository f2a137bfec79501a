// GEMM on the CPU: OpenBLAS's single-threaded sgemm on slices of C, one slice per pool thread.
// Splitting ourselves keeps one thread per core for the whole step and, for the small matrices of
// a training step (64 x 512 x 784), beats OpenBLAS's own threading (measured in bench/).

#include <algorithm>

#include "accrue/kernels/cpu/openblas.hpp"
#include "accrue/kernels/cpu/parallel.hpp"
#include "accrue/kernels/cpu/skinny_gemm.hpp"
#include "accrue/kernels/gemm.hpp"

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
