#include "../test_util.hpp"

#include <cmath>

using namespace accrue;
using namespace accrue::test;

namespace {
void expect_contract(const Layer& layer, const Shape& sample, LayerCheckOptions options = {}) {
  const LayerCheckResult r = check_layer(layer, sample, options);
  BOOST_CHECK_MESSAGE(r.ok, layer.type_name() << " on " << sample.str() << ":\n" << r.report);
}
}  // namespace

BOOST_AUTO_TEST_CASE(every_layer_keeps_its_contract) {
  expect_contract(layers::Dense{5}, {7});
  expect_contract(layers::Dense{5, {.bias = false}}, {7});
  expect_contract(layers::Dense{3}, {2, 4});  // acts on the last dimension, as Keras and PyTorch
  expect_contract(layers::ReLU{}, {6});
  expect_contract(layers::GELU{}, {6});
  expect_contract(layers::GELU{{.tanh_approximation = true}}, {6});
  expect_contract(layers::Sigmoid{}, {6});
  expect_contract(layers::Tanh{}, {6});
  expect_contract(layers::Softmax{}, {6});
  expect_contract(layers::Softmax{0}, {4, 3});
  expect_contract(layers::Flatten{}, {2, 3, 2});
  expect_contract(layers::Reshape{{3, -1}}, {2, 3, 2});
  expect_contract(layers::Slice{{.axis = -1, .begin = 1, .end = 3}}, {2, 4});
  expect_contract(layers::Slice{{.axis = 1, .begin = 0, .end = 2}}, {3, 4});
  expect_contract(layers::Dropout{0.4f}, {10});
}

// The name given to LayerBase is type_name(), the copy's too, and the name load_model makes the
// layer by; the layers derived from a shared base (LSTM from Recurrent) and the templates
// (MaxPool2d, SinusoidalEncoding) as well.
BOOST_AUTO_TEST_CASE(a_layer_is_named_once) {
  std::vector<std::pair<std::string, std::unique_ptr<Layer>>> named;
  named.emplace_back("Dense", std::make_unique<layers::Dense>(2));
  named.emplace_back("LSTM", std::make_unique<layers::LSTM>(3));
  named.emplace_back("GRU", std::make_unique<layers::GRU>(3));
  named.emplace_back("BatchNorm2d", std::make_unique<layers::BatchNorm2d>());
  named.emplace_back("MaxPool2d", std::make_unique<layers::MaxPool2d>(2));
  named.emplace_back("AvgPool2d", std::make_unique<layers::AvgPool2d>(2));
  named.emplace_back("PositionalEmbedding", std::make_unique<layers::PositionalEmbedding>(4));
  named.emplace_back("SinusoidalEncoding", std::make_unique<layers::SinusoidalEncoding>(4));
  named.emplace_back("Residual", std::make_unique<layers::Residual>(layers::ReLU{}));
  for (const auto& [name, layer] : named) {
    BOOST_TEST(layer->type_name() == name);
    BOOST_TEST(layer->clone()->type_name() == name);
    BOOST_TEST(layer_type_registered(name));
  }
  BOOST_CHECK_EXCEPTION(layers::SinusoidalEncoding{0}, ValueError, message_has({"SinusoidalEncoding", "max_length"}));
}

BOOST_AUTO_TEST_CASE(convolutional_and_normalization_layers_keep_their_contract) {
  expect_contract(layers::Conv2d{4, 3}, {2, 6, 5});
  expect_contract(layers::Conv2d{4, 3, {.padding = layers::same, .bias = false}}, {3, 5, 5});
  expect_contract(layers::Conv2d{2, {3, 2}, {.stride = 2, .padding = {1, 0}}}, {2, 7, 6});
  expect_contract(layers::Conv2d{3, 3, {.padding = 2, .dilation = 2}}, {1, 6, 6});
  expect_contract(layers::Conv2d{6, 3, {.padding = 1, .groups = 2}}, {4, 4, 4});
  expect_contract(layers::Conv2d{3, 1}, {3, 3, 3});
  expect_contract(layers::MaxPool2d{2}, {2, 6, 6}, {.distinct = true});
  expect_contract(layers::MaxPool2d{3, {.stride = 2, .padding = 1}}, {2, 5, 5}, {.distinct = true});
  expect_contract(layers::AvgPool2d{2}, {2, 6, 6});
  expect_contract(layers::AvgPool2d{3, {.stride = 1, .padding = 1, .count_include_pad = false}}, {2, 4, 4});
  expect_contract(layers::GlobalAvgPool2d{}, {3, 4, 5});
  expect_contract(layers::BatchNorm2d{}, {3, 4, 4});
  expect_contract(layers::BatchNorm2d{{.affine = false}}, {2, 3, 3});
  expect_contract(layers::BatchNorm1d{}, {5});
  expect_contract(layers::BatchNorm1d{{.momentum = std::nullopt}}, {4, 3});
  expect_contract(layers::GroupNorm{2}, {4, 3, 3});
  expect_contract(layers::GroupNorm{4, {.affine = false}}, {4, 2, 2});
  expect_contract(layers::LayerNorm{}, {6});
  expect_contract(layers::LayerNorm{{.dims = 3}}, {2, 3, 3});
  layers::Normalization adapted;
  adapted.adapt(Tensor::from({1.0f, 2.0f, 3.0f, 5.0f, 2.0f, 7.0f}, {3, 2}));
  expect_contract(adapted, {2});
  layers::Normalization channels{{.axis = 0}};
  channels.adapt(Tensor::uniform({4, 3, 2, 2}, -1.0f, 2.0f));
  expect_contract(channels, {3, 2, 2});
}

BOOST_AUTO_TEST_CASE(dense_infers_input_and_initialises_as_pytorch) {
  layers::Dense dense{512};
  Generator gen{1};
  dense.ensure_built({784}, gen);
  BOOST_TEST(dense.output_shape().str() == "(512,)");
  BOOST_TEST(dense.weight().shape().str() == "(512, 784)");
  BOOST_TEST(dense.parameter_count() == 784 * 512 + 512);
  // nn.Linear: weight and bias uniform in +-1/sqrt(in_features), so the variance is bound^2 / 3.
  const double bound = 1.0 / std::sqrt(784.0);
  const auto w = dense.weight().to_vector();
  double var = 0;
  for (float v : w) {
    BOOST_REQUIRE(std::abs(v) <= bound);
    var += static_cast<double>(v) * v;
  }
  var /= static_cast<double>(w.size());
  BOOST_TEST(var == bound * bound / 3, boost::test_tools::tolerance(0.02));
  for (float v : dense.bias().to_vector()) BOOST_REQUIRE(std::abs(v) <= bound);
}

BOOST_AUTO_TEST_CASE(dropout_drops_at_its_rate_and_only_in_training) {
  layers::Dropout drop{0.25f};
  Generator gen{3};
  drop.ensure_built({10000}, gen);
  const Tensor x = Tensor::ones({1, 10000});
  const auto y = drop.forward(x).to_vector();
  int zeros = 0;
  for (float v : y) {
    if (v == 0.0f) ++zeros;
    else BOOST_REQUIRE(std::abs(v - 1.0f / 0.75f) < 1e-6);
  }
  BOOST_TEST(std::abs(zeros / 10000.0 - 0.25) < 0.02);
  // A fresh mask for every batch.
  BOOST_TEST(drop.forward(x).to_vector() != y);
  drop.set_training(false);
  BOOST_TEST(drop.forward(x).to_vector() == x.to_vector(), boost::test_tools::per_element());
  BOOST_CHECK_EXCEPTION(layers::Dropout{1.0f}, ValueError, message_has({"[0, 1)"}));
}

BOOST_AUTO_TEST_CASE(bad_layer_configuration) {
  BOOST_CHECK_EXCEPTION(layers::Dense{0}, ValueError, message_has({"Dense", "units", "0"}));
  layers::Dense dense{4};
  dense.set_name("head");
  Generator gen{1};
  BOOST_CHECK_EXCEPTION(dense.ensure_built(Shape{}, gen), ShapeError, message_has({"'head'", "Dense", "()"}));
  layers::Softmax softmax{3};
  BOOST_CHECK_EXCEPTION(softmax.ensure_built({4}, gen), ShapeError, message_has({"Softmax", "dimension 3"}));
}
