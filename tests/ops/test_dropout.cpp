// Dropout (framework/ops/dropout.cpp) with a fixed mask: finite-difference gradients.

#include "op_test.hpp"
BOOST_AUTO_TEST_SUITE(dropout)

BOOST_AUTO_TEST_CASE(dropout_with_a_fixed_mask) {
  // Re-seeding inside f gives the same mask at every evaluation, so the op is a fixed function.
  expect_gradients("dropout", [](const auto& in) {
    Generator gen{99};
    return ops::dropout(in[0], 0.3f, true, &gen);
  }, {leaf(random_tensor({8, 16}, 93))});
}

BOOST_AUTO_TEST_SUITE_END()
