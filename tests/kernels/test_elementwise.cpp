// Element-wise and reduction kernels against direct computations, including broadcasts.

#include "../test_util.hpp"

#include <accrue/kernels/common/branchless_math.hpp>
#include <accrue/kernels/elementwise.hpp>
#include <accrue/kernels/reduce.hpp>
#include <bit>
#include <cmath>
#include <limits>

using namespace accrue;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(unary_values) {
  const Tensor x = Tensor::from({-2.0f, -0.5f, 0.0f, 0.5f, 3.0f}, {5});
  std::vector<float> relu, gelu, sig, th;
  for (float v : x.to_vector()) {
    relu.push_back(v > 0 ? v : 0);
    gelu.push_back(static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))));
    sig.push_back(static_cast<float>(1 / (1 + std::exp(-static_cast<double>(v)))));
    th.push_back(std::tanh(v));
  }
  check_close(ops::relu(x), relu);
  check_close(ops::gelu(x), gelu, 1e-6, 1e-6);
  check_close(ops::sigmoid(x), sig, 1e-6, 1e-6);
  check_close(ops::tanh(x), th, 1e-6, 1e-6);
  // Sigmoid stays finite and exact at the extremes.
  check_close(ops::sigmoid(Tensor::from({-100.0f, 100.0f}, {2})), {0.0f, 1.0f}, 1e-30, 0);
}

BOOST_AUTO_TEST_CASE(large_unary_uses_every_thread_and_matches) {
  const Tensor x = random_tensor({300000}, 5, -3, 3);
  const auto v = x.to_vector();
  std::vector<float> expected(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) expected[i] = 2.0f * v[i] - 1.0f;
  check_close(ops::affine(x, 2.0f, -1.0f), expected);
}

BOOST_AUTO_TEST_CASE(broadcast_forward_and_reduced_gradient) {
  const Tensor a = random_tensor({2, 3, 4}, 1), b = random_tensor({3, 1}, 2);
  const auto av = a.to_vector(), bv = b.to_vector();
  std::vector<float> expected(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) expected[(i * 3 + j) * 4 + k] = av[(i * 3 + j) * 4 + k] * bv[j];
  check_close(a * b, expected);

  // d(sum(a*b))/db[j] = sum over i, k of a[i, j, k].
  Tensor bl = b.clone();
  bl.set_requires_grad(true);
  ops::sum(a * bl).backward();
  std::vector<float> db(3, 0.0f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) db[j] += av[(i * 3 + j) * 4 + k];
  check_close(bl.grad(), db, 1e-5, 1e-5);
  BOOST_CHECK_EXCEPTION(a + random_tensor({5}, 3), ShapeError, message_has({"add", "(2, 3, 4)", "(5,)"}));
}

BOOST_AUTO_TEST_CASE(sums_and_means) {
  const Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  check_close(ops::sum(x), {21});
  check_close(ops::sum(x, 0), {5, 7, 9});
  check_close(ops::sum(x, 1), {6, 15});
  check_close(ops::mean(x, 1, true), {2, 5});
  BOOST_TEST(ops::mean(x, 1, true).shape().str() == "(2, 1)");
  // A long sum keeps float32 accuracy (double partial sums across threads).
  const Tensor ones = Tensor::full({3000001}, 0.1f);
  BOOST_TEST(ops::sum(ones).item() == 300000.1f, boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(argmax_and_one_hot) {
  const Tensor x = Tensor::from({0.1f, 0.7f, 0.2f, 5, 5, 1}, {2, 3});
  BOOST_TEST(ops::argmax(x).to_vector<std::int32_t>() == (std::vector<std::int32_t>{1, 0}),
             boost::test_tools::per_element());
  check_close(ops::one_hot(Tensor::from(std::vector<std::int32_t>{2, 0}, {2}), 3), {0, 0, 1, 1, 0, 0});
}

namespace {
// Distance in units in the last place of `want` (a float).
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const double ulp = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
  return std::fabs(got - want) / ulp;
}
}  // namespace

// GELU's erf and exp on the CPU (kernels/common/branchless_math.hpp) against the C library in
// double, over every 64th float between -6 and 6 (erf) or -100 and 0 (exp), and the edge values.
BOOST_AUTO_TEST_CASE(branchless_erf_and_exp_stay_within_a_few_ulps) {
  using kernels::common::branchless_erf;
  using kernels::common::branchless_exp_nonpositive;
  double worst_erf = 0, worst_exp = 0;
  float at_erf = 0, at_exp = 0;
  const auto sweep = [](float from, float to, auto&& f) {
    for (std::uint32_t b = std::bit_cast<std::uint32_t>(0.0f); ; b += 64) {  // positive magnitudes
      const float m = std::bit_cast<float>(b);
      if (m > std::max(std::fabs(from), std::fabs(to))) break;
      if (m <= to && m >= from) f(m);
      if (-m >= from && -m <= to) f(-m);
    }
  };
  sweep(-6.0f, 6.0f, [&](float x) {
    const double e = ulps(branchless_erf(x), std::erf(static_cast<double>(x)));
    if (e > worst_erf) worst_erf = e, at_erf = x;
  });
  sweep(-100.0f, 0.0f, [&](float x) {
    const double want = std::exp(static_cast<double>(x));
    if (want < std::numeric_limits<float>::min()) {  // below the normal range it returns 0
      BOOST_TEST(branchless_exp_nonpositive(x) <= std::numeric_limits<float>::min());
      return;
    }
    const double e = ulps(branchless_exp_nonpositive(x), want);
    if (e > worst_exp) worst_exp = e, at_exp = x;
  });
  BOOST_TEST(worst_erf <= 3.0, "erf off by " << worst_erf << " ulps at " << at_erf);
  BOOST_TEST(worst_exp <= 2.0, "exp off by " << worst_exp << " ulps at " << at_exp);
  BOOST_TEST_MESSAGE("worst: erf " << worst_erf << " ulps at " << at_erf << ", exp " << worst_exp << " ulps at "
                                   << at_exp);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  BOOST_TEST(std::isnan(branchless_erf(nan)));
  BOOST_TEST(branchless_erf(inf) == 1.0f);
  BOOST_TEST(branchless_erf(-inf) == -1.0f);
  BOOST_TEST(std::signbit(branchless_erf(-0.0f)));
  BOOST_TEST(std::isnan(branchless_exp_nonpositive(nan)));
  BOOST_TEST(branchless_exp_nonpositive(-inf) == 0.0f);
  BOOST_TEST(branchless_exp_nonpositive(0.0f) == 1.0f);
}
