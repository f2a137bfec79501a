// Element-wise ops (framework/ops/elementwise.cpp): finite-difference gradients of the unary ops and of
// the binary ones with broadcasting.

#include "op_test.hpp"
BOOST_AUTO_TEST_SUITE(elementwise)

BOOST_AUTO_TEST_CASE(unary_ops) {
  const Shape s{3, 7};
  expect_unary("relu", ops::relu, away_from_zero(s, 1, 0.05f));
  expect_unary("sigmoid", ops::sigmoid, random_tensor(s, 2, -3, 3));
  expect_unary("tanh", ops::tanh, random_tensor(s, 3, -2, 2));
  expect_unary("exp", ops::exp, random_tensor(s, 4, -1, 1));
  expect_unary("log", ops::log, random_tensor(s, 5, 0.5f, 3));
  expect_unary("neg", ops::neg, random_tensor(s, 6));
  expect_unary("square", ops::square, random_tensor(s, 7));
  expect_unary("sqrt", ops::sqrt, random_tensor(s, 8, 0.5f, 3));
  expect_unary("abs", ops::abs, away_from_zero(s, 9, 0.05f));
  expect_gradients("gelu", [](const auto& in) { return ops::gelu(in[0]); }, {leaf(random_tensor(s, 10, -3, 3))});
  expect_gradients("gelu_tanh", [](const auto& in) { return ops::gelu(in[0], true); }, {leaf(random_tensor(s, 11, -3, 3))});
  expect_gradients("pow", [](const auto& in) { return ops::pow(in[0], 2.5f); }, {leaf(random_tensor(s, 12, 0.5f, 2))});
  expect_gradients("affine", [](const auto& in) { return ops::affine(in[0], -1.5f, 0.25f); }, {leaf(random_tensor(s, 13))});
  expect_gradients("scalar operators", [](const auto& in) { return (2.0f - in[0]) * 3.0f / 4.0f + 1.0f; },
                   {leaf(random_tensor(s, 14))});
}

BOOST_AUTO_TEST_CASE(binary_ops_with_broadcasting) {
  using Op = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<std::string, Op>> binary = {
      {"add", ops::add}, {"sub", ops::sub}, {"mul", ops::mul}, {"div", ops::div}};
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{4, 1}, {1, 5}}, {{2, 3, 4}, {3, 1}}, {{5}, {4, 5}}, {{}, {3, 2}}};
  std::uint64_t seed = 20;
  for (const auto& [name, op] : binary) {
    for (const auto& [sa, sb] : shapes) {
      Tensor a = leaf(random_tensor(sa, ++seed, 0.5f, 2.0f));  // positive, so div is smooth
      Tensor b = leaf(random_tensor(sb, ++seed, 0.5f, 2.0f));
      expect_gradients(name + " " + sa.str() + " " + sb.str(), [op](const auto& in) { return op(in[0], in[1]); },
                       {a, b});
    }
  }
}

// torch.maximum and torch.minimum: away from ties the gradient goes to the side kept (finite
// differences see it); at a tie each side gets half, and a NaN on either side is the result. The
// values at ties and NaNs are PyTorch 1.13's.
BOOST_AUTO_TEST_CASE(maximum_and_minimum) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{4, 1}, {1, 5}}};
  // Shuffled multiples of 0.1 plus `offset` (distinct_values centres an odd count on 0.05).
  const auto spaced = [](const Shape& s, std::uint64_t seed, float offset) {
    return ops::affine(distinct_values(s, seed, 0.1f), 1.0f, offset + (s.numel() % 2 == 1 ? 0.05f : 0.0f));
  };
  std::uint64_t seed = 60;
  for (const auto& [sa, sb] : shapes) {
    // a's values and b's fall between each other: no two within 0.05.
    Tensor a = leaf(spaced(sa, ++seed, -1.0f));
    Tensor b = leaf(spaced(sb, ++seed, -0.95f));
    expect_gradients("maximum " + sa.str() + " " + sb.str(), [](const auto& in) { return ops::maximum(in[0], in[1]); }, {a, b});
    expect_gradients("minimum " + sa.str() + " " + sb.str(), [](const auto& in) { return ops::minimum(in[0], in[1]); }, {a, b});
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = leaf(Tensor::from({1.0f, 2.0f, 3.0f, nan, 5.0f}, {5}));
  Tensor y = leaf(Tensor::from({0.0f, 2.0f, 4.0f, 1.0f, nan}, {5}));
  for (const bool larger : {true, false}) {
    const Tensor out = larger ? ops::maximum(x, y) : ops::minimum(x, y);
    const std::vector<float> v = out.to_vector<float>();
    BOOST_TEST(v[0] == (larger ? 1.0f : 0.0f));
    BOOST_TEST(v[1] == 2.0f);
    BOOST_TEST(v[2] == (larger ? 4.0f : 3.0f));
    BOOST_TEST((std::isnan(v[3]) && std::isnan(v[4])));
    x.set_grad(Tensor());
    y.set_grad(Tensor());
    ops::sum(out).backward();
    const std::vector<float> gx = x.grad().to_vector<float>(), gy = y.grad().to_vector<float>();
    // Element 1 ties: half each.
    BOOST_TEST(gx[1] == 0.5f);
    BOOST_TEST(gy[1] == 0.5f);
    BOOST_TEST(gx[0] == (larger ? 1.0f : 0.0f));
    BOOST_TEST(gy[0] == (larger ? 0.0f : 1.0f));
    BOOST_TEST(gx[2] == (larger ? 0.0f : 1.0f));
    BOOST_TEST(gy[2] == (larger ? 1.0f : 0.0f));
    // Beside a NaN, both sides get the whole gradient.
    BOOST_TEST((gx[3] == 1.0f && gy[3] == 1.0f && gx[4] == 1.0f && gy[4] == 1.0f));
  }
}

BOOST_AUTO_TEST_SUITE_END()
