// Element-wise and reduction kernels against direct computations, including broadcasts.

#include "test_util.hpp"

#include <accrue/kernels/elementwise.hpp>
#include <accrue/kernels/reduce.hpp>
#include <cmath>

using namespace accrue;
using accrue::test::check_close;
using accrue::test::message_has;
using accrue::test::random_tensor;

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
