// GEMM against a naive double-precision product, for every transpose, beta, and shapes that take
// both the single-threaded and the split paths.

#include "../test_util.hpp"

#include <cstring>

#include <accrue/kernels/cpu/gemm/openblas.hpp>
#include <accrue/kernels/cpu/gemm/skinny.hpp>
#include <accrue/kernels/gemm.hpp>
#include <accrue/kernels/reduce.hpp>

using namespace accrue;
using namespace accrue::test;

namespace {
std::vector<float> naive(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                         const std::vector<float>& A, const std::vector<float>& B, float beta, const std::vector<float>& C) {
  std::vector<float> out(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k) {
        const double a = ta ? A[k * M + i] : A[i * K + k];
        const double b = tb ? B[j * K + k] : B[k * N + j];
        s += a * b;
      }
      out[i * N + j] = static_cast<float>(alpha * s + (beta == 0.0f ? 0.0 : beta * C[i * N + j]));
    }
  return out;
}
}  // namespace

BOOST_AUTO_TEST_CASE(gemm_matches_naive_product) {
  const std::vector<std::array<std::int64_t, 3>> shapes = {{1, 1, 1}, {3, 5, 7}, {64, 512, 784}, {512, 784, 64},
                                                           {16, 10, 512}, {100, 33, 17}, {7, 300, 2}};
  std::uint64_t seed = 1;
  for (const auto& [M, N, K] : shapes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (float beta : {0.0f, 1.0f, 0.5f}) {
          const Tensor A = random_tensor(ta ? Shape{K, M} : Shape{M, K}, ++seed);
          const Tensor B = random_tensor(tb ? Shape{N, K} : Shape{K, N}, ++seed);
          Tensor C = random_tensor({M, N}, ++seed);
          const auto expected = naive(ta, tb, M, N, K, 0.75f, A.to_vector(), B.to_vector(), beta, C.to_vector());
          if (beta == 0.0f) C.fill_(std::nanf(""));  // beta = 0 must ignore C, NaN included
          kernels::gemm(ta, tb, 0.75f, A, B, beta, C);
          check_close(C, expected, 1e-4, 1e-4,
                      fmt::format("gemm {}x{}x{} ta={} tb={} beta={}", M, N, K, ta, tb, beta));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gemm_edge_cases) {
  Tensor C = Tensor::full({2, 3}, 2.0f);
  kernels::gemm(false, false, 1.0f, Tensor::zeros({2, 0}), Tensor::zeros({0, 3}), 0.5f, C);  // K = 0: C = beta C
  check_close(C, std::vector<float>(6, 1.0f));
  BOOST_CHECK_EXCEPTION(kernels::gemm(false, false, 1.0f, Tensor::zeros({2, 3}), Tensor::zeros({4, 5}), 0.0f, C),
                        ShapeError, accrue::test::message_has({"(2, 3)", "(4, 5)", "do not multiply"}));
}

// linear adds the bias as the product is written (on AVX-512 processors, up to 256 rows) or fills y
// with it first; either way the bits are those of the fill followed by gemm with beta = 1, which
// is what linear computed before the bias joined the product's store.
BOOST_AUTO_TEST_CASE(linear_adds_the_bias_with_the_bits_of_fill_then_gemm) {
  const std::vector<std::array<std::int64_t, 3>> shapes = {{64, 512, 784}, {7, 10, 33}, {5, 3, 0}, {300, 20, 40}};
  std::uint64_t seed = 100;
  for (const auto& [M, N, K] : shapes) {
    const Tensor x = random_tensor({M, K}, ++seed), w = random_tensor({N, K}, ++seed), bias = random_tensor({N}, ++seed);
    for (const bool with_bias : {true, false}) {
      const Tensor b = with_bias ? bias : Tensor();
      Tensor expected = Tensor::empty({M, N});
      if (with_bias) kernels::expand_dim(bias, 1, M, N, 1.0f, expected, false);
      kernels::gemm(false, true, 1.0f, x, w, with_bias ? 1.0f : 0.0f, expected);
      Tensor y = Tensor::full({M, N}, std::nanf(""));  // y's old contents are ignored
      kernels::linear(x, w, b, y, DType::f32);
      const auto got = y.to_vector(), want = expected.to_vector();
      BOOST_TEST(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0,
                 fmt::format("linear {}x{}x{} bias={}", M, N, K, with_bias));
      const auto naive_product = naive(false, true, M, N, K, 1.0f, x.to_vector(), w.to_vector(), 0.0f, {});
      std::vector<float> reference(naive_product);
      const std::vector<float> bias_values = bias.to_vector();
      for (std::int64_t i = 0; with_bias && i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) reference[i * N + j] += bias_values[j];
      check_close(y, reference, 1e-4, 1e-4, fmt::format("linear {}x{}x{} against the naive product", M, N, K));
    }
  }
}

// Each set of skinny kernels this processor runs (AVX-512 and AVX2 both, on an AVX-512 one), not
// only the one gemm picks: every tile size with ragged edges, and the in-order sums
// DeferredWeightGradients relies on.
BOOST_AUTO_TEST_CASE(skinny_kernels_match_the_naive_product_and_add_in_order) {
  namespace cpu = kernels::cpu;
  const auto available = cpu::skinny_kernels_available();
  if (available.empty()) {
    std::puts("SKIPPED: skinny_kernels_match_the_naive_product_and_add_in_order: this processor has neither AVX-512 "
              "nor AVX2 with FMA");
    return;
  }
  const std::vector<std::array<std::int64_t, 3>> shapes = {{1, 1, 1},    {3, 25, 7},   {9, 49, 17},
                                                           {16, 10, 64}, {17, 50, 33}, {64, 130, 784}};
  std::uint64_t seed = 500;
  for (const cpu::SkinnyKernel kernel : available) {
    const std::string name = cpu::skinny_kernel_name(kernel);
    for (const auto& [M, N, K] : shapes)
      for (const auto [ta, tb] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}})
        for (const float beta : {0.0f, 1.0f, 0.5f}) {
          const Tensor A = random_tensor(ta ? Shape{K, M} : Shape{M, K}, ++seed);
          const Tensor B = random_tensor(tb ? Shape{N, K} : Shape{K, N}, ++seed);
          Tensor C = random_tensor({M, N}, ++seed);
          const auto expected = naive(ta, tb, M, N, K, 0.75f, A.to_vector(), B.to_vector(), beta, C.to_vector());
          if (beta == 0.0f) C.fill_(std::nanf(""));
          cpu::skinny_gemm(ta, tb, M, N, K, 0.75f, A.data<float>(), A.size(1), B.data<float>(), B.size(1), beta,
                           C.data<float>(), N, kernel);
          check_close(C, expected, 1e-4, 1e-4,
                      fmt::format("{} skinny gemm {}x{}x{} ta={} tb={} beta={}", name, M, N, K, ta, tb, beta));
        }
    // dW = dy^T x split along K (rows) into two calls with alpha = beta = 1: the bits of one call.
    for (const auto& [M, N, K] : shapes) {
      if (K < 2) continue;
      const Tensor A = random_tensor({K, M}, ++seed), B = random_tensor({K, N}, ++seed), C0 = random_tensor({M, N}, ++seed);
      const Tensor whole = C0.clone(), split = C0.clone();
      cpu::skinny_gemm(true, false, M, N, K, 1.0f, A.data<float>(), M, B.data<float>(), N, 1.0f, whole.data<float>(), N,
                       kernel);
      const std::int64_t k1 = K / 3 + 1;
      cpu::skinny_gemm(true, false, M, N, k1, 1.0f, A.data<float>(), M, B.data<float>(), N, 1.0f, split.data<float>(), N,
                       kernel);
      cpu::skinny_gemm(true, false, M, N, K - k1, 1.0f, A.data<float>() + k1 * M, M, B.data<float>() + k1 * N, N, 1.0f,
                       split.data<float>(), N, kernel);
      const auto w = whole.to_vector(), s = split.to_vector();
      BOOST_TEST(std::memcmp(w.data(), s.data(), w.size() * sizeof(float)) == 0,
                 fmt::format("{} TN {}x{}x{} split at {}", name, M, N, K, k1));
    }
    // linear's fused bias.
    const Tensor x = random_tensor({9, 40}, ++seed), w = random_tensor({11, 40}, ++seed), bias = random_tensor({11}, ++seed);
    Tensor y = Tensor::full({9, 11}, std::nanf(""));
    cpu::skinny_linear(9, 11, 40, x.data<float>(), w.data<float>(), bias.data<float>(), y.data<float>(), kernel);
    std::vector<float> reference = naive(false, true, 9, 11, 40, 1.0f, x.to_vector(), w.to_vector(), 0.0f, {});
    const auto b = bias.to_vector();
    for (std::size_t i = 0; i < reference.size(); ++i) reference[i] += b[i % 11];
    check_close(y, reference, 1e-4, 1e-4, name + " skinny linear");
  }
}

BOOST_AUTO_TEST_CASE(openblas_uses_kernels_for_this_processor) {
  const bool preset = std::getenv("OPENBLAS_CORETYPE") != nullptr;
  const auto& blas = kernels::cpu::openblas();
  BOOST_TEST_MESSAGE("OpenBLAS " << blas.library << ": " << blas.core << " kernels, " << blas.how_chosen);
  BOOST_TEST(!blas.core.empty());
  const std::string wanted = kernels::cpu::openblas_core_for_this_cpu();
  if (!wanted.empty() && !preset) {
    // The name OpenBLAS reports is upper case ("COOPERLAKE"); ours is its OPENBLAS_CORETYPE spelling.
    std::string upper = wanted;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    std::string core = blas.core;
    for (char& ch : core) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    BOOST_TEST(core == upper);
  }
  if (!preset) BOOST_TEST(std::getenv("OPENBLAS_CORETYPE") == nullptr);  // the choice did not leak into the environment
}
