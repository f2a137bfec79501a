// batch_norm, group_norm and layer_norm (framework/ops/norm.cpp): values against the definitions,
// finite-difference gradients in every mode, running statistics with PyTorch's momentum
// convention, and errors.

#include <cmath>

#include "op_test.hpp"

namespace {

// Normalization couples every element of a set: a looser absolute tolerance for the sums.
void expect_norm_gradients(const std::string& name, const accrue::test::OpFn& f, const std::vector<Tensor>& inputs) {
  accrue::test::expect_gradients(name, f, inputs, {.eps = 1e-2, .atol = 5e-3, .rtol = 2e-2, .max_elements = 300});
}

// Mean and biased variance of the elements of x (N, C, L) with index i picked by `in_set`.
template <class F>
std::pair<double, double> moments(const std::vector<float>& v, F&& in_set) {
  double s = 0, n = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (in_set(i)) s += v[i], n += 1;
  const double m = s / n;
  double q = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (in_set(i)) q += (v[i] - m) * (v[i] - m);
  return {m, q / n};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(norm)

BOOST_AUTO_TEST_CASE(batch_norm_normalizes_each_channel_over_the_batch) {
  const std::int64_t N = 3, C = 2, L = 4;
  const Tensor x = random_tensor({N, C, 2, 2}, 1, -2, 3);
  const Tensor g = random_tensor({C}, 2, 0.5f, 1.5f), b = random_tensor({C}, 3);
  Tensor rm = Tensor::zeros({C}), rv = Tensor::ones({C});
  const auto y = ops::batch_norm(x, rm, rv, g, b, true, 0.1f, 1e-5f).to_vector();
  const auto xv = x.to_vector();
  for (std::int64_t c = 0; c < C; ++c) {
    const auto [m, var] = moments(xv, [&](std::size_t i) { return static_cast<std::int64_t>(i) / L % C == c; });
    for (std::size_t i = 0; i < xv.size(); ++i) {
      if (static_cast<std::int64_t>(i) / L % C != c) continue;
      const double expected = (xv[i] - m) / std::sqrt(var + 1e-5) * g.to_vector()[c] + b.to_vector()[c];
      BOOST_TEST(y[i] == expected, boost::test_tools::tolerance(1e-4));
    }
    // Running statistics: 0.9 old + 0.1 new, the variance unbiased (12 values per channel).
    BOOST_TEST(rm.to_vector()[c] == 0.1 * m, boost::test_tools::tolerance(1e-5));
    BOOST_TEST(rv.to_vector()[c] == 0.9 + 0.1 * var * 12 / 11, boost::test_tools::tolerance(1e-5));
  }
  // Evaluation uses the running statistics.
  const auto ye = ops::batch_norm(x, rm, rv, g, b, false).to_vector();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const std::size_t c = i / L % C;
    const double expected =
        (xv[i] - rm.to_vector()[c]) / std::sqrt(rv.to_vector()[c] + 1e-5) * g.to_vector()[c] + b.to_vector()[c];
    BOOST_TEST(ye[i] == expected, boost::test_tools::tolerance(1e-4));
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_gradients) {
  expect_norm_gradients("batch_norm 4-D affine",
                   [](const auto& in) { return ops::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); },
                   {leaf(random_tensor({3, 2, 3, 2}, 4, -2, 2)), leaf(random_tensor({2}, 5, 0.5f, 1.5f)),
                    leaf(random_tensor({2}, 6))});
  expect_norm_gradients("batch_norm 2-D no affine",
                   [](const auto& in) { return ops::batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true); },
                   {leaf(random_tensor({5, 3}, 7, -2, 2))});
  expect_norm_gradients("batch_norm 3-D with running statistics",
                   [](const auto& in) {
                     return ops::batch_norm(in[0], Tensor::zeros({2}), Tensor::ones({2}), in[1], in[2], true);
                   },
                   {leaf(random_tensor({2, 2, 5}, 8, -2, 2)), leaf(random_tensor({2}, 9, 0.5f, 1.5f)),
                    leaf(random_tensor({2}, 10))});
  const Tensor rm = random_tensor({3}, 11), rv = random_tensor({3}, 12, 0.5f, 2.0f);
  expect_norm_gradients("batch_norm evaluation",
                   [rm, rv](const auto& in) { return ops::batch_norm(in[0], rm, rv, in[1], in[2], false); },
                   {leaf(random_tensor({2, 3, 2, 2}, 13)), leaf(random_tensor({3}, 14)), leaf(random_tensor({3}, 15))});
}

BOOST_AUTO_TEST_CASE(group_norm_normalizes_each_sample_and_group) {
  const std::int64_t N = 2, C = 4, G = 2, L = 3;
  const Tensor x = random_tensor({N, C, L}, 20, -1, 4);
  const Tensor g = random_tensor({C}, 21, 0.5f, 1.5f), b = random_tensor({C}, 22);
  const auto y = ops::group_norm(x, G, g, b).to_vector();
  const auto xv = x.to_vector();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const std::size_t n = i / (C * L), c = i / L % C, set = n * G + c / (C / G);
    const auto [m, var] = moments(xv, [&](std::size_t j) { return j / (C * L) * G + j / L % C / (C / G) == set; });
    const double expected = (xv[i] - m) / std::sqrt(var + 1e-5) * g.to_vector()[c] + b.to_vector()[c];
    BOOST_TEST(y[i] == expected, boost::test_tools::tolerance(1e-4));
  }
}

BOOST_AUTO_TEST_CASE(group_and_layer_norm_gradients) {
  for (std::int64_t groups : {1, 2, 6})
    expect_norm_gradients("group_norm groups " + std::to_string(groups),
                     [groups](const auto& in) { return ops::group_norm(in[0], groups, in[1], in[2]); },
                     {leaf(random_tensor({2, 6, 2, 2}, 30 + groups, -2, 2)), leaf(random_tensor({6}, 40, 0.5f, 1.5f)),
                      leaf(random_tensor({6}, 41))});
  expect_norm_gradients("group_norm no affine", [](const auto& in) { return ops::group_norm(in[0], 2, Tensor(), Tensor()); },
                   {leaf(random_tensor({3, 4, 3}, 42, -2, 2))});
  expect_norm_gradients("layer_norm last dimension",
                   [](const auto& in) { return ops::layer_norm(in[0], {5}, in[1], in[2]); },
                   {leaf(random_tensor({4, 5}, 43, -2, 2)), leaf(random_tensor({5}, 44, 0.5f, 1.5f)),
                    leaf(random_tensor({5}, 45))});
  expect_norm_gradients("layer_norm two dimensions",
                   [](const auto& in) { return ops::layer_norm(in[0], {3, 2}, in[1], in[2]); },
                   {leaf(random_tensor({2, 2, 3, 2}, 46, -2, 2)), leaf(random_tensor({3, 2}, 47, 0.5f, 1.5f)),
                    leaf(random_tensor({3, 2}, 48))});
}

BOOST_AUTO_TEST_CASE(layer_norm_is_per_row) {
  const Tensor x = Tensor::from({1, 2, 3, 4, 10, 10, 10, 14}, {2, 4});
  const auto y = ops::layer_norm(x, {4}, Tensor(), Tensor()).to_vector();
  // Row 0: mean 2.5, variance 1.25.
  BOOST_TEST(y[0] == (1 - 2.5) / std::sqrt(1.25 + 1e-5), boost::test_tools::tolerance(1e-5));
  // Row 1: mean 11, variance 3.
  BOOST_TEST(y[7] == 3 / std::sqrt(3 + 1e-5), boost::test_tools::tolerance(1e-5));
}

BOOST_AUTO_TEST_CASE(bad_normalization_input_is_named) {
  BOOST_CHECK_EXCEPTION(ops::group_norm(random_tensor({2, 6, 3}, 1), 4, Tensor(), Tensor()), ShapeError,
                        message_has({"6 channels", "4 groups"}));
  BOOST_CHECK_EXCEPTION(ops::layer_norm(random_tensor({2, 6}, 1), {5}, Tensor(), Tensor()), ShapeError,
                        message_has({"(2, 6)", "(5,)"}));
  BOOST_CHECK_EXCEPTION(ops::batch_norm(random_tensor({1, 3}, 1), Tensor(), Tensor(), Tensor(), Tensor(), true),
                        ShapeError, message_has({"more than one value per channel"}));
  BOOST_CHECK_EXCEPTION(ops::batch_norm(random_tensor({4, 3}, 1), Tensor(), Tensor(), Tensor::ones({2}), Tensor(), true),
                        ShapeError, message_has({"weight of shape (2,)", "(4, 3)"}));
}

BOOST_AUTO_TEST_SUITE_END()
