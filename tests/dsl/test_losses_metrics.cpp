#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(builtin_losses_reduce_as_pytorch) {
  const Tensor logits = random_tensor({4, 3}, 1, -2, 2);
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{0, 2, 1, 1}, {4});
  const losses::CrossEntropy ce;
  const auto per = ce.per_sample(logits, labels).to_vector();
  BOOST_TEST(ce(logits, labels).item() == (per[0] + per[1] + per[2] + per[3]) / 4, boost::test_tools::tolerance(1e-6f));
  const losses::MSE mse;
  const Tensor p = random_tensor({4, 2, 3}, 2), t = random_tensor({4, 2, 3}, 3);
  BOOST_TEST(mse.per_sample(p, t).shape().str() == "(4,)");
  BOOST_TEST(mse(p, t).item() == ops::mean(mse.per_sample(p, t)).item(), boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(mse_takes_targets_of_one_value_per_sample_as_keras) {
  // Keras accepts y (N,) against an output (N, 1); so does MSE, also through fit.
  const Tensor p = random_tensor({5, 1}, 6), t = random_tensor({5}, 7);
  const losses::MSE mse;
  BOOST_TEST(mse.per_sample(p, t).to_vector() == mse.per_sample(p, ops::reshape(t, Shape{5, 1})).to_vector());
  BOOST_TEST(mse(p, t).item() == mse(p, ops::reshape(t, Shape{5, 1})).item());
  BOOST_CHECK_EXCEPTION(mse(random_tensor({5, 2}, 8), t), ShapeError, message_has({"MSE", "(5, 2)", "(5,)"}));
  manual_seed(3);
  Sequential model{layers::Input{3}, layers::Dense{1}};
  model.compile(optim::SGD{.lr = 0.1}, losses::MSE{});
  const Tensor x = random_tensor({16, 3}, 9);
  const History h = model.fit(Dataset{x, ops::sum(x, 1)}, {.epochs = 2, .batch_size = 8, .verbose = 0});
  BOOST_TEST(h.epochs() == 2u);
}

BOOST_AUTO_TEST_CASE(loss_handle_sums_per_sample_values) {
  const Tensor pred = random_tensor({5, 2}, 4), target = random_tensor({5, 2}, 5);
  const Loss builtin = losses::MSE{};
  const float expected = ops::sum(losses::MSE{}.per_sample(pred, target)).item();
  BOOST_TEST(builtin.batch_sum(pred, target).item() == expected, boost::test_tools::tolerance(1e-6f));
  // A callable giving per-sample values, and one giving the batch mean, mean the same loss.
  const Loss per_sample = [](const Tensor& p, const Tensor& t) { return ops::mean(ops::square(p - t), 1); };
  const Loss mean_only = [](const Tensor& p, const Tensor& t) { return ops::mean(ops::square(p - t)); };
  BOOST_TEST(per_sample.batch_sum(pred, target).item() == expected, boost::test_tools::tolerance(1e-5f));
  BOOST_TEST(mean_only.batch_sum(pred, target).item() == expected, boost::test_tools::tolerance(1e-5f));
  const Loss wrong = [](const Tensor& p, const Tensor&) { return p; };
  BOOST_CHECK_EXCEPTION(wrong.batch_sum(pred, target), ShapeError, message_has({"(5, 2)", "one value per sample"}));
}

BOOST_AUTO_TEST_CASE(accuracy_and_mean_loss) {
  metrics::Accuracy acc;
  acc.update(Tensor::from({0.9f, 0.1f, 0.2f, 0.8f, 0.6f, 0.4f}, {3, 2}), Tensor::from(std::vector<std::int32_t>{0, 1, 1}, {3}), 0);
  BOOST_TEST(acc.result() == 2.0 / 3.0, boost::test_tools::tolerance(1e-12));
  acc.reset();
  BOOST_TEST(acc.result() == 0.0);
  BOOST_CHECK_EXCEPTION(acc.update(Tensor::zeros({3}), Tensor::zeros({3}), 0), ShapeError, message_has({"(batch, classes)"}));
  metrics::MeanLoss loss;
  loss.update(Tensor::zeros({4, 2}), Tensor(), 2.0);
  loss.update(Tensor::zeros({1, 2}), Tensor(), 3.0);
  BOOST_TEST(loss.result() == 1.0);
  Metric handle = metrics::Accuracy{};
  Metric copy = handle;
  handle.update(Tensor::from({1, 0}, {1, 2}), Tensor::from(std::vector<std::int32_t>{0}, {1}), 0);
  BOOST_TEST(handle.result() == 1.0);
  BOOST_TEST(copy.result() == 0.0);  // copies are independent
  // A sample without a label (CrossEntropy's ignore_index) counts neither way.
  metrics::Accuracy masked;
  masked.update(Tensor::from({0.9f, 0.1f, 0.2f, 0.8f, 0.6f, 0.4f}, {3, 2}), Tensor::from(std::vector<std::int32_t>{0, -100, 1}, {3}), 0);
  BOOST_TEST(masked.result() == 0.5);
}
