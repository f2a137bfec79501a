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

BOOST_AUTO_TEST_SUITE_END()
