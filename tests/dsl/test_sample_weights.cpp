// Sample and class weights (Dataset::with_sample_weights, FitOptions::class_weight) with Keras's
// semantics: each sample's loss times its weight, the sum divided by the number of samples. Under
// accumulation a window's loss is that of one weighted batch of its samples; the processes' case
// is in tests/distributed/test_data_parallel.cpp.

#include <cstdio>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

Sequential mlp() {
  manual_seed(17);
  return Sequential{layers::Input{6}, layers::Dense{12}, layers::ReLU{}, layers::Dense{4}};
}

// Weights 0.25 .. 2.65 that differ from sample to sample, so that the order of samples matters.
std::vector<float> ramp(std::int64_t n) {
  std::vector<float> w(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.25f + 0.3f * static_cast<float>(i % 9);
  return w;
}

const std::map<std::int64_t, float> class_weight{{0, 0.5f}, {2, 4.0f}};

std::vector<float> trained(const Dataset& data, const optim::Recipe& recipe, FitOptions options) {
  Sequential m = mlp();
  m.compile(recipe, losses::CrossEntropy{});
  options.verbose = 0;
  m.fit(data, options);
  std::vector<float> all;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.to_vector<float>();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, static_cast<double>(std::abs(a[i] - b[i])));
  return d;
}

}  // namespace

BOOST_AUTO_TEST_CASE(class_weight_reads_keras_classes) {
  // int32 labels, values (N, 1) rounded, one-hot rows by their largest entry; a class left out weighs 1.
  BOOST_TEST((class_weight_per_sample(Tensor::from(std::vector<std::int32_t>{0, 1, 2, 3}, {4}), class_weight) ==
              std::vector<float>{0.5f, 1.0f, 4.0f, 1.0f}));
  BOOST_TEST((class_weight_per_sample(Tensor::from({0.2f, 1.9f, 0.0f}, {3, 1}), class_weight) ==
              std::vector<float>{0.5f, 4.0f, 0.5f}));
  BOOST_TEST((class_weight_per_sample(Tensor::from({0.1f, 0.0f, 0.9f, 1.0f, 0.0f, 0.0f}, {2, 3}), class_weight) ==
              std::vector<float>{4.0f, 0.5f}));
  BOOST_CHECK_EXCEPTION(class_weight_per_sample(Tensor::from(std::vector<std::int32_t>{0, 1, 2, 3}, {2, 2}), class_weight),
                        ValueError, message_has({"class_weight", "one class per sample", "(2, 2)"}));
  BOOST_CHECK_EXCEPTION(class_weight_per_sample(Tensor::from(std::vector<std::int32_t>{0}, {1}), {{3, -1.0f}}), ValueError,
                        message_has({"class 3", "-1"}));
}

BOOST_AUTO_TEST_CASE(sample_weights_follow_their_samples) {
  const Dataset d = blobs(20, 3).with_sample_weights(ramp(20));
  BOOST_TEST((*d.subset(5, 8).sample_weights() == std::vector<float>{ramp(20)[5], ramp(20)[6], ramp(20)[7]}));
  BOOST_TEST((*d.select({9, 0}).sample_weights() == std::vector<float>{ramp(20)[9], ramp(20)[0]}));
  const auto [a, b] = d.split(0.5, 7);
  BOOST_TEST(a.sample_weights()->size() + b.sample_weights()->size() == 20u);
  BOOST_TEST(d.take(4).sample_weights()->size() == 4u);
  BOOST_TEST(blobs(20, 3).sample_weights() == nullptr);
  // Weights are part of the data a checkpoint's run compares.
  BOOST_TEST(d.fingerprint() != blobs(20, 3).fingerprint());
  BOOST_CHECK_EXCEPTION(blobs(20, 3).with_sample_weights(ramp(19)), ValueError, message_has({"19 sample weights", "20"}));
  std::vector<float> bad = ramp(20);
  bad[11] = std::nanf("");
  BOOST_CHECK_EXCEPTION(blobs(20, 3).with_sample_weights(bad), ValueError, message_has({"sample 11", "nan"}));
}

BOOST_AUTO_TEST_CASE(accumulation_4_equals_one_weighted_batch) {
  // 96 samples: micro-batches of 16 x 4 against one batch of 64 (a short last window of 2 x 16 against
  // 32), class and sample weights together, SGD with momentum and AdamW with clipping.
  const Dataset data = blobs(96, 5).with_sample_weights(ramp(96));
  for (const optim::Recipe& recipe : {optim::Recipe{optim::SGD{.lr = 0.1, .momentum = 0.9}},
                                      optim::Recipe{optim::AdamW{.lr = 1e-2}}.clip(0.5)}) {
    const FitOptions base{.epochs = 2, .class_weight = class_weight, .seed = 4};
    FitOptions accumulated = base, batch = base;
    accumulated.batch_size = 16;
    accumulated.accumulate = 4;
    batch.batch_size = 64;
    const std::vector<float> a = trained(data, recipe, accumulated), b = trained(data, recipe, batch);
    const std::vector<float> unweighted = trained(blobs(96, 5), recipe, batch);
    BOOST_TEST_MESSAGE(recipe.str() << ": accumulated against one batch " << largest_difference(a, b)
                                    << ", weighted against unweighted " << largest_difference(b, unweighted));
    BOOST_TEST(largest_difference(a, b) < 2e-6);
    BOOST_TEST(largest_difference(b, unweighted) > 1e-2);  // the weights change training
  }
}

BOOST_AUTO_TEST_CASE(weights_divide_by_the_number_of_samples_as_keras) {
  // Every weight 2 doubles the loss (sum of w l over N, not over the sum of weights): with plain SGD
  // the same steps as the unweighted loss at twice the learning rate.
  std::vector<float> twos(64, 2.0f);
  const FitOptions options{.epochs = 1, .batch_size = 8, .accumulate = 2, .seed = 4};
  const std::vector<float> weighted = trained(blobs(64, 5).with_sample_weights(twos), optim::SGD{.lr = 0.05}, options);
  const std::vector<float> doubled = trained(blobs(64, 5), optim::SGD{.lr = 0.1}, options);
  BOOST_TEST(largest_difference(weighted, doubled) < 1e-6);
  // A class weighed 0 leaves its samples out of the gradient entirely.
  const std::vector<std::int32_t> labels = blobs(64, 5).targets().to_vector<std::int32_t>();
  std::vector<std::int64_t> kept;
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] != 1) kept.push_back(static_cast<std::int64_t>(i));
  FitOptions one_batch{.epochs = 1, .batch_size = 64, .class_weight = {{1, 0.0f}}, .shuffle = false};
  const std::vector<float> without_class = trained(blobs(64, 5), optim::SGD{.lr = 0.1}, one_batch);
  // The same gradient from the other samples alone, scaled by their share of the 64.
  one_batch.class_weight = {};
  const double share = static_cast<double>(kept.size()) / 64.0;
  const std::vector<float> others = trained(blobs(64, 5).select(kept), optim::SGD{.lr = 0.1 * share},
                                            FitOptions{.epochs = 1, .batch_size = 64, .shuffle = false});
  BOOST_TEST(largest_difference(without_class, others) < 1e-6);
}

BOOST_AUTO_TEST_CASE(evaluate_weighs_the_loss_not_the_metrics) {
  Sequential m = mlp();
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const Dataset data = blobs(40, 8);
  const std::vector<float> w = ramp(40);
  const Evaluation plain = m.evaluate(data, {.batch_size = 7});
  const Evaluation weighted = m.evaluate(data.with_sample_weights(w), {.batch_size = 7});
  const std::vector<float> per_sample =
      losses::CrossEntropy{}.per_sample(m.predict(data.inputs()), data.targets()).to_vector<float>();
  double expected = 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) expected += static_cast<double>(w[i]) * per_sample[i];
  expected /= 40.0;
  BOOST_TEST(weighted.loss == expected, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(weighted["accuracy"] == plain["accuracy"]);
}

BOOST_AUTO_TEST_CASE(the_banner_and_explain_show_the_weights) {
  std::FILE* out = std::tmpfile();
  Sequential m = mlp();
  m.compile(optim::SGD{.lr = 0.1}.accumulate(2), losses::CrossEntropy{});
  m.fit(blobs(32, 5).with_sample_weights(std::vector<float>(32, 1.5f)),
        {.epochs = 1,
         .batch_size = 8,
         .callbacks = {callbacks::ProgressBar{{.mode = callbacks::ProgressBarOptions::Mode::lines, .stream = out}},
                       callbacks::Explain{{.windows = 1, .stream = out}}},
         .class_weight = {{2, 3.0f}},
         .verbose = 0});
  const std::string text = test::read_file(out);
  std::fclose(out);
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find("loss weighted by class_weight {2: 3} times the dataset's sample weights") != std::string::npos);
  BOOST_TEST(text.find("each sample's loss times its weight") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_loss_without_per_sample_values_cannot_be_weighted) {
  Sequential m = mlp();
  m.compile(optim::SGD{.lr = 0.1},
            Loss{[](const Tensor& p, const Tensor& t) { return losses::CrossEntropy{}(p, t); }, "mean_only"});
  BOOST_CHECK_EXCEPTION(m.fit(blobs(16, 5).with_sample_weights(ramp(16)), {.batch_size = 8, .verbose = 0}), ShapeError,
                        message_has({"mean_only", "sample weights need one value per sample"}));
}
