// Losses (framework/ops/loss.cpp): finite-difference gradients of cross-entropy and MSE.

#include "op_test.hpp"
BOOST_AUTO_TEST_SUITE(loss)

BOOST_AUTO_TEST_CASE(loss_functions) {
  const Tensor logits = random_tensor({6, 5}, 90, -3, 3);
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{0, 4, 1, 1, 3, 2}, {6});
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    for (float smoothing : {0.0f, 0.1f}) {
      expect_gradients("cross_entropy", [=](const auto& in) { return ops::cross_entropy(in[0], labels, r, smoothing); },
                       {leaf(logits.clone())});
    }
    expect_gradients("mse_loss", [=](const auto& in) { return ops::mse_loss(in[0], in[1], r); },
                     {leaf(random_tensor({4, 3}, 91)), leaf(random_tensor({4, 3}, 92))});
  }
}

BOOST_AUTO_TEST_SUITE_END()
