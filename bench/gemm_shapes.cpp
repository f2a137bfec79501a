// The GEMMs of one training step of the tutorial MLP, timed through Accrue's skinny kernels and
// through OpenBLAS (split over the same threads), to choose between them per shape; and in
// bfloat16 (float32 accumulation) where the processor has a bfloat16 kernel: the whole call as
// `.amp()` makes it (packing the float32 operands included) and the kernel alone on packed operands.
//
//   gemm_shapes [--batch-sizes 16,64] [--reps 200]

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <accrue/kernels/cpu/gemm/bf16.hpp>
#include <accrue/kernels/cpu/gemm.hpp>
#include <accrue/kernels/cpu/gemm/openblas.hpp>
#include <accrue/kernels/cpu/parallel.hpp>
#include <accrue/kernels/cpu/gemm/skinny.hpp>
#include <algorithm>
#include <chrono>

#include "timing.hpp"

using namespace accrue;
namespace cpu = accrue::kernels::cpu;

namespace {

struct Case {
  const char* what;
  bool ta, tb;
  std::int64_t M, N, K;
};


void openblas_split(const Case& c, float alpha, const float* A, std::int64_t lda, const float* B, std::int64_t ldb,
                    float beta, float* C, std::int64_t ldc) {
  const auto sgemm = cpu::openblas().sgemm;
  const int threads = cpu::num_threads();
  const bool split_n = c.N >= c.M;
  const std::int64_t extent = split_n ? c.N : c.M, align = split_n ? 16 : 8, units = (extent + align - 1) / align;
  cpu::parallel_tasks(static_cast<int>(std::min<std::int64_t>(threads, units)), [&](int t) {
    const int tasks = static_cast<int>(std::min<std::int64_t>(threads, units));
    const std::int64_t b = std::min(extent, units * t / tasks * align), e = std::min(extent, units * (t + 1) / tasks * align);
    if (b >= e) return;
    const std::int64_t m0 = split_n ? 0 : b, m1 = split_n ? c.M : e, n0 = split_n ? b : 0, n1 = split_n ? e : c.N;
    const float* a = c.ta ? A + m0 : A + m0 * lda;
    const float* bb = c.tb ? B + n0 * ldb : B + n0;
    sgemm(101, c.ta ? 112 : 111, c.tb ? 112 : 111, static_cast<int>(m1 - m0), static_cast<int>(n1 - n0),
          static_cast<int>(c.K), alpha, a, static_cast<int>(lda), bb, static_cast<int>(ldb), beta, C + m0 * ldc + n0,
          static_cast<int>(ldc));
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Training-step GEMMs: skinny kernels against OpenBLAS"};
  std::vector<std::int64_t> batches = {16, 64};
  int reps = 200;
  app.add_option("--batch-sizes", batches)->delimiter(',');
  app.add_option("--reps", reps);
  CLI11_PARSE(app, argc, argv);
  const cpu::Bf16Kernel low = cpu::bf16_kernel();
  fmt::print("OpenBLAS {} kernels; bfloat16 kernel: {}; {} threads\n", cpu::openblas().core, cpu::bf16_kernel_name(low),
             cpu::num_threads());
  fmt::print("| shape | M x N x K | skinny GFLOP/s | OpenBLAS GFLOP/s | skinny / OpenBLAS | bfloat16 GFLOP/s (call / "
             "kernel) |\n|---|---|---|---|---|---|\n");
  for (std::int64_t b : batches) {
    const std::vector<Case> cases = {
        {"fwd 1  y = x W^T", false, true, b, 512, 784},   {"fwd 2", false, true, b, 512, 512},
        {"fwd 3", false, true, b, 10, 512},               {"dW 1 = dy^T x", true, false, 512, 784, b},
        {"dW 2", true, false, 512, 512, b},               {"dW 3", true, false, 10, 512, b},
        {"dx 2 = dy W", false, false, b, 512, 512},       {"dx 3", false, false, b, 512, 10},
    };
    for (const Case& c : cases) {
      const Tensor A = Tensor::uniform(c.ta ? Shape{c.K, c.M} : Shape{c.M, c.K}, -1, 1);
      const Tensor B = Tensor::uniform(c.tb ? Shape{c.N, c.K} : Shape{c.K, c.N}, -1, 1);
      const Tensor C = Tensor::zeros({c.M, c.N});
      const std::int64_t lda = A.size(1), ldb = B.size(1);
      const double flop = 2.0 * c.M * c.N * c.K;
      const double ours = bench::best_seconds(reps, [&] {
        cpu::skinny_gemm(c.ta, c.tb, c.M, c.N, c.K, 1.0f, A.data<float>(), lda, B.data<float>(), ldb, 0.0f,
                         C.data<float>(), c.N);
      });
      const double blas = bench::best_seconds(reps, [&] {
        openblas_split(c, 1.0f, A.data<float>(), lda, B.data<float>(), ldb, 0.0f, C.data<float>(), c.N);
      });
      std::string bf16 = "-";
      if (low != cpu::Bf16Kernel::none) {
        const double call = bench::best_seconds(reps, [&] {
          cpu::gemm_low_precision(c.ta, c.tb, c.M, c.N, c.K, 1.0f, DType::bf16, A.data<float>(), DType::f32, lda,
                                  B.data<float>(), DType::f32, ldb, 0.0f, DType::f32, C.data<float>(), c.N);
        });
        const cpu::Bf16A a = cpu::pack_bf16_a(c.ta, c.M, c.K, A.data<float>(), DType::f32, lda);
        const cpu::Bf16B pb = cpu::pack_bf16_b(c.tb, c.K, c.N, B.data<float>(), DType::f32, ldb);
        const double kernel = bench::best_seconds(
            reps, [&] { cpu::bf16_gemm(a, pb, {.C = C.data<float>(), .type = DType::f32, .ldc = c.N}); });
        bf16 = fmt::format("{:.0f} / {:.0f}", flop / call / 1e9, flop / kernel / 1e9);
      }
      fmt::print("| {} (batch {}) | {}x{}x{} | {:.0f} | {:.0f} | {:.2f} | {} |\n", c.what, b, c.M, c.N, c.K,
                 flop / ours / 1e9, flop / blas / 1e9, blas / ours, bf16);
    }
  }
}
