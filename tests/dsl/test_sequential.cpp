#include <thread>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {
Sequential tutorial_model() {
  return Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                    layers::Dense{512},       layers::ReLU{},    layers::Dense{10}};
}

// A user's layer, written from ops only: y = x * scale, with `scale` learned per feature.
class Scale final : public LayerBase<Scale, "Scale"> {
 public:
  Shape build(const Shape& input, Generator&) override {
    add_parameter("scale", Tensor::full({input[-1]}, 2.0f, {.category = MemoryCategory::parameters}));
    return input;
  }
  Tensor forward(const Tensor& x) override { return x * named_parameters()[0].second; }
};
}  // namespace

BOOST_AUTO_TEST_CASE(summary_of_the_tutorial_model) {
  Sequential model = tutorial_model();
  model.compile(optim::SGD{.lr = 1e-3}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const std::string s = model.summary_str();
  BOOST_TEST_MESSAGE(s);
  for (const char* part : {"flatten (Flatten)", "(None, 784)", "dense (Dense)", "(None, 512)", "401,920", "re_lu (ReLU)",
                           "dense_1 (Dense)", "262,656", "dense_2 (Dense)", "(None, 10)", "5,130",
                           "Total params: 669,706 (2.55 MiB)", "SGD(lr=0.001)", "CrossEntropy"})
    BOOST_CHECK_MESSAGE(s.find(part) != std::string::npos, "summary lacks '" << part << "'");
  BOOST_TEST(model.parameter_count() == 669706);
}

BOOST_AUTO_TEST_CASE(unbuilt_model_says_so_and_builds_lazily) {
  Sequential model{layers::Flatten{}, layers::Dense{4}};
  BOOST_TEST(!model.built());
  BOOST_TEST(model.summary_str().find("Not built yet") != std::string::npos);
  const Tensor y = model(Tensor::ones({2, 3, 5}));
  BOOST_TEST(y.shape().str() == "(2, 4)");
  BOOST_TEST(model.input_shape()->str() == "(3, 5)");
}

BOOST_AUTO_TEST_CASE(parameters_carry_pytorch_names) {
  const Sequential model = tutorial_model();
  std::vector<std::string> names;
  for (const auto& [name, p] : model.named_parameters()) names.push_back(name);
  BOOST_TEST(names == (std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(shape_errors_name_layer_and_shapes) {
  Sequential model = tutorial_model();
  BOOST_CHECK_EXCEPTION(model(Tensor::zeros({4, 1, 28, 27})), ShapeError,
                        message_has({"(1, 28, 28)", "(4, 1, 28, 27)", "(1, 28, 27)"}));
  Sequential bad{layers::Dense{3}};
  BOOST_CHECK_EXCEPTION(bad.build(Shape{}), ShapeError, message_has({"layer 0", "'dense'", "Dense", "()"}));
  BOOST_CHECK_EXCEPTION((Sequential{layers::Input{}, layers::Dense{3}}), ShapeError, message_has({"'dense'"}));
  BOOST_CHECK_EXCEPTION((Sequential{layers::Dense{3}, layers::Input{4}}), ValueError, message_has({"Input must come first"}));
  BOOST_CHECK_EXCEPTION(model.layer<layers::Dense>(0), ValueError, message_has({"'flatten'"}));
  BOOST_TEST(model.layer<layers::Dense>(1).units() == 512);
}

BOOST_AUTO_TEST_CASE(custom_layer_trains_without_backward_code) {
  Sequential model{layers::Input{3}, Scale{}, layers::Dense{2}};
  model.compile(optim::SGD{.lr = 0.1}, losses::MSE{});
  const Tensor x = Tensor::from({1, 2, 3, -1, 0, 1}, {2, 3});
  const Tensor y = Tensor::from({1, 0, 0, 1}, {2, 2});
  const double before = model.evaluate(Dataset{x, y}).loss;
  model.fit(Dataset{x, y}, {.epochs = 20, .batch_size = 2, .verbose = 0});
  BOOST_TEST(model.evaluate(Dataset{x, y}).loss < before / 4);
  BOOST_TEST(model.named_parameters()[0].first == "0.scale");
}

BOOST_AUTO_TEST_CASE(add_to_a_built_model_builds_the_new_layer) {
  Sequential model{layers::Input{3}, layers::Dense{4}};
  model.compile(optim::SGD{}, losses::MSE{});
  model.add(layers::ReLU{}).add(layers::Dense{2});
  BOOST_TEST(model.output_shape().str() == "(2,)");
  BOOST_TEST(model.optimizer().parameters().size() == 4u);
}

BOOST_AUTO_TEST_CASE(predict_evaluate_and_compile_errors) {
  manual_seed(1);
  Sequential model{layers::Input{4}, layers::Dense{3}};
  const Tensor x = accrue::test::random_tensor({10, 4}, 5);
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, {10});
  BOOST_CHECK_EXCEPTION(model.fit(Dataset{x, labels}), ValueError, message_has({"compile"}));
  model.compile(optim::SGD{}, losses::CrossEntropy{});
  // Without metrics, the README's binding still holds: the loss, and NaN for the absent metric.
  const auto [alone, none] = model.evaluate(Dataset{x, labels});
  BOOST_TEST(alone == model.evaluate(Dataset{x, labels}).loss);
  BOOST_TEST(std::isnan(none));
  BOOST_TEST(!model.evaluate(Dataset{x, labels}).first_metric().has_value());
  model.compile(optim::SGD{}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const auto [loss, accuracy] = model.evaluate(Dataset{x, labels}, {.batch_size = 3});
  BOOST_TEST(loss == ops::cross_entropy(model(x), labels).item(), boost::test_tools::tolerance(1e-6));
  BOOST_TEST((accuracy >= 0.0 && accuracy <= 1.0));
  const Tensor p = model.predict(x, 3);
  check_close(p, model(x), 1e-6, 1e-6);
}

// Several threads of a service predicting with one model get what one thread gets, and leave the
// model as it was (dropout and batch normalization in evaluation mode, the model still training).
BOOST_AUTO_TEST_CASE(four_threads_predict_at_once_as_one_does) {
  manual_seed(2);
  Sequential model{layers::Input{1, 28, 28}, layers::Conv2d{8, 3, {.padding = 1}}, layers::BatchNorm2d{},
                   layers::ReLU{},           layers::Flatten{},                     layers::Dropout{0.5},
                   layers::Dense{10}};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  model.fit(accrue::test::random_images(64), {.batch_size = 16, .verbose = 0});  // running statistics
  BOOST_REQUIRE(model.training());
  const Tensor x = accrue::test::random_images(96, 7).inputs();
  const std::vector<float> alone = model.predict(x, 8).to_vector();
  std::vector<std::vector<float>> got(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) got[t] = model.predict(x, 8).to_vector();
    });
  for (std::thread& t : threads) t.join();
  for (const std::vector<float>& g : got) BOOST_TEST(g == alone, boost::test_tools::per_element());
  BOOST_TEST(model.training());
  BOOST_TEST(model.layer(5).training());
}

// README: "The chain ... prints as SGD(lr=0.001) accumulate=4 clip=1", with << and with fmt.
BOOST_AUTO_TEST_CASE(values_print_with_ostream_and_fmt) {
  const optim::Recipe recipe = optim::SGD{.lr = 1e-3}.accumulate(4).clip(1.0);
  std::ostringstream out;
  out << recipe << " | " << Shape{2, 3} << " | " << Tensor::from({1.0f, 2.0f}, {2});
  BOOST_TEST(out.str() == fmt::format("{} | {} | {}", recipe, Shape{2, 3}, Tensor::from({1.0f, 2.0f}, {2})));
  BOOST_TEST(out.str().starts_with("SGD(lr=0.001) accumulate=4 clip=1 | (2, 3) | "));
  History h;
  Logs logs;
  logs.set("loss", 0.5);
  h.append(logs);
  std::ostringstream history;
  history << h;
  BOOST_TEST(history.str() == "History (1 epoch)\n  epoch 1: loss: 0.5000");
  BOOST_TEST(fmt::format("{}", h) == history.str());
}

BOOST_AUTO_TEST_CASE(a_layer_name_that_is_not_utf8_is_refused_where_it_is_given) {
  layers::Dense dense{4};
  dense.set_name("dense\xff");
  Sequential model;
  BOOST_CHECK_EXCEPTION(model.add(dense), ValueError, message_has({"the name of layer 0 (Dense) is not UTF-8: byte 0xff at 5"}));
}

// A long layer name widens the first column instead of pushing its row's columns out of line.
BOOST_AUTO_TEST_CASE(summary_columns_stay_aligned_with_long_names) {
  layers::Dense named{10};
  named.set_name("a_dense_layer_with_a_name_longer_than_the_column");
  Sequential model{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, std::move(named)};
  std::istringstream lines{model.summary_str()};
  std::vector<std::size_t> shape_columns, param_ends;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("(None") == std::string::npos && line.find("Output Shape") == std::string::npos) continue;
    shape_columns.push_back(line.find(line.find("(None") != std::string::npos ? "(None" : "Output Shape"));
    param_ends.push_back(line.size());
  }
  BOOST_REQUIRE(shape_columns.size() == 4u);
  for (std::size_t i = 1; i < shape_columns.size(); ++i) {
    BOOST_TEST(shape_columns[i] == shape_columns[0]);
    BOOST_TEST(param_ends[i] == param_ends[0]);
  }
}
