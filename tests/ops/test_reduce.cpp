// Reductions (framework/ops/reduce.cpp): finite-difference gradients of sums and means.

#include "op_test.hpp"
BOOST_AUTO_TEST_SUITE(reduce)

BOOST_AUTO_TEST_CASE(reductions) {
  const Tensor x = random_tensor({3, 4, 5}, 40);
  expect_gradients("sum", [](const auto& in) { return ops::sum(in[0]); }, {leaf(x.clone())});
  expect_gradients("mean", [](const auto& in) { return ops::mean(in[0]); }, {leaf(x.clone())});
  for (int dim : {0, 1, 2, -1}) {
    for (bool keep : {false, true}) {
      expect_gradients("sum dim " + std::to_string(dim), [=](const auto& in) { return ops::sum(in[0], dim, keep); },
                       {leaf(x.clone())});
      expect_gradients("mean dim " + std::to_string(dim), [=](const auto& in) { return ops::mean(in[0], dim, keep); },
                       {leaf(x.clone())});
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
