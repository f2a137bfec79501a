// A whole model in one file: Sequential::save writes the weights and the architecture, load_model
// makes the same model with no code of its own, giving the same outputs bit for bit; a layer type
// the program has not registered, and a damaged description, are refused with their names.

#include <chrono>

#include "../test_util.hpp"
#include "model_zoo.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <thread>

#include <accrue/dsl/layer_registry.hpp>
#include <accrue/models.hpp>
#include <accrue/framework/serialization/safetensors.hpp>

using namespace accrue;
using namespace accrue::test;
using accrue::test::zoo::images;
using accrue::test::zoo::Scale;
using accrue::test::zoo::tokens;

namespace {

// A layer of a user's own that names itself (type_name() by hand) and is never registered.
class Unregistered final : public LayerBase<Unregistered> {
 public:
  std::string type_name() const override { return "Unregistered"; }
  Tensor forward(const Tensor& x) override { return x; }
};

}  // namespace

// Registered with the one line the header shows.
ACCRUE_REGISTER_LAYER(Scale);

namespace {

// Trains one step (zoo::train_one_step), saves, loads, and compares predictions bit for bit and the
// layers' configurations.
void round_trip(Sequential& model, const Tensor& x, const Tensor& y, const std::string& what) {
  test::zoo::train_one_step(model, {what, {}, x, y});
  test::TempDir dir{"model_file"};
  const std::string path = (dir.path / "m.safetensors").string();
  model.save(path);
  Model loaded = load_model(path);
  BOOST_TEST_INFO(what);
  BOOST_REQUIRE(loaded.size() == model.size());
  for (std::size_t i = 0; i < model.size(); ++i) {
    BOOST_TEST(loaded.layer(i).config_lines() == model.layer(i).config_lines(), what << " layer " << i);
    BOOST_TEST(loaded.layer(i).name() == model.layer(i).name());
  }
  const auto a = model.predict(x, 3).to_vector<float>(), b = loaded.predict(x, 3).to_vector<float>();
  BOOST_TEST((a == b), what << ": predictions differ");
  // The weights are still the PyTorch state_dict a weights-only model loads.
  Model same = load_model(path);
  BOOST_TEST(same.named_state().size() == model.named_state().size());
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_built_in_layer_type_is_registered) {
  for (const char* type : {"Dense", "Conv2d", "BatchNorm1d", "BatchNorm2d", "GroupNorm", "LayerNorm", "Dropout", "Embedding",
                           "PositionalEmbedding", "SinusoidalEncoding", "ReLU", "GELU", "Sigmoid", "Tanh", "Softmax", "Flatten",
                           "MaxPool2d", "AvgPool2d", "GlobalAvgPool2d", "Normalization", "LSTM", "GRU",
                           "MultiHeadAttention", "TransformerBlock", "Residual", "Scale", "Reshape", "Slice"})
    BOOST_TEST(layer_type_registered(type), type);
  BOOST_TEST(!layer_type_registered("Unregistered"));
}

BOOST_AUTO_TEST_CASE(image_models_come_back_the_same) {
  manual_seed(1);
  for (const test::zoo::Example& e : test::zoo::image_models()) {
    Sequential model = e.make();
    // A layer of the user's own, registered, comes back too.
    if (e.name == "CNN with GroupNorm") model.add(Scale{2.5});
    round_trip(model, e.x, e.y, e.name);
  }
}

BOOST_AUTO_TEST_CASE(sequence_models_come_back_the_same) {
  manual_seed(2);
  for (const test::zoo::Example& e : test::zoo::sequence_models()) {
    Sequential model = e.make();
    round_trip(model, e.x, e.y, e.name);
  }
  const Tensor x = tokens(6, 8, 11, 5);
  const Tensor y = Tensor::from(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2}, {6});
  Sequential sinusoidal{layers::Input{8}, layers::Embedding{11, 8}, layers::SinusoidalEncoding{16},
                        layers::Softmax{-1}, layers::Flatten{}, layers::Dense{3}};
  round_trip(sinusoidal, x, y, "sinusoidal encoding and softmax");
}

BOOST_AUTO_TEST_CASE(normalization_statistics_come_back_with_the_model) {
  manual_seed(3);
  Tensor x = images(9, {5}, 4) * 3.0f + 1.0f;
  layers::Normalization norm;
  norm.adapt(x);
  Sequential model{layers::Input{5}, norm, layers::Dense{2}};
  round_trip(model, x, Tensor::from(std::vector<std::int32_t>{0, 1, 0, 1, 0, 1, 0, 1, 0}, {9}), "Normalization");
}

BOOST_AUTO_TEST_CASE(a_model_of_many_layers_loads) {
  // Adding a layer scanned every layer before it (names, types), and the JSON reader walked a list
  // after each of its elements: 100,000 layers took 26 s. Both are linear now (the time is
  // reported, not bounded: timings belong to benchmarks).
  test::TempDir dir{"many_layers"};
  const std::string path = (dir.path / "m.safetensors").string();
  Sequential many{layers::Input{4}};
  for (int i = 0; i < 20000; ++i) many.add(layers::ReLU{});
  many.add(layers::Dense{2});
  BOOST_TEST(many.layer(19999).name() == "re_lu_19999");
  many.save(path);
  const auto t0 = std::chrono::steady_clock::now();
  const Model loaded = load_model(path);
  BOOST_TEST_MESSAGE("20,000 layers loaded in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  BOOST_TEST(loaded.size() == 20001u);
  auto same_name = std::make_unique<layers::ReLU>();
  same_name->set_name("re_lu_17");
  BOOST_CHECK_EXCEPTION(many.add(std::move(same_name)), ValueError, message_has({"two layers named 're_lu_17'"}));
}

BOOST_AUTO_TEST_CASE(unknown_layer_types_and_damaged_descriptions_are_named) {
  test::TempDir dir{"model_file_errors"};
  const std::string path = (dir.path / "m.safetensors").string();
  Sequential mine{layers::Input{3}, layers::Dense{4}, Unregistered{}, layers::Dense{2}};
  mine.save(path);
  BOOST_CHECK_EXCEPTION(load_model(path), ValueError,
                        message_has({path, "layer 1 (Unregistered)", "'Unregistered'", "ACCRUE_REGISTER_LAYER(Unregistered)"}));
  // Weights alone are not a model.
  mine.save_weights(path);
  BOOST_CHECK_EXCEPTION(load_model(path), ValueError, message_has({path, "no model", "load_weights"}));
  // An option of the wrong kind, and one missing, name the layer and the option.
  Sequential plain{layers::Input{3}, layers::Dense{4}, layers::ReLU{}, layers::Dense{2}};
  plain.save(path);
  const auto rewrite = [&](const std::function<void(nlohmann::json&)>& change) {
    return zoo::with_description(path, (dir.path / "damaged.safetensors").string(), change);
  };
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["layers"][2]["config"]["units"] = "two"; })), ValueError,
                        message_has({"layer 2 (Dense)", "'units'", "whole number", "a text"}));
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["layers"][0]["config"].erase("bias"); })), ValueError,
                        message_has({"layer 0 (Dense)", "no option 'bias'"}));
  // Layers nested without end are refused, not followed until the stack runs out.
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) {
                          nlohmann::json inner = {{"type", "ReLU"}, {"config", nlohmann::json::object()}};
                          for (int k = 0; k < 100; ++k) {
                            nlohmann::json outer = {{"type", "Residual"}, {"config", nlohmann::json::object()}};
                            outer["layers"] = nlohmann::json::array();
                            outer["layers"].push_back(std::move(inner));
                            inner = std::move(outer);
                          }
                          j["layers"][1] = inner;
                        })),
                        ValueError, message_has({"layer 1 (Residual)", "nest more than 64 deep"}));
  // JSON nested 100,000 deep (300 KB) is refused as it is read: printing or copying it recursed
  // until the stack ran out.
  {
    serialization::SafetensorsFile file = serialization::load_safetensors(path);
    file.metadata["accrue.model"] = std::string(100000, '[') + std::string(100000, ']');
    const std::string deep = (dir.path / "deep.safetensors").string();
    serialization::save_safetensors(deep, file.tensors, file.metadata);
    BOOST_CHECK_EXCEPTION(load_model(deep), ValueError, message_has({deep, "the model's description", "nested more than 256 deep"}));
  }
  // A description whose layers do not fit the weights: nothing half-loaded, every problem named.
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["layers"][0]["config"]["units"] = 5; })), ValueError,
                        message_has({"do not fit", "0.weight"}));
  // A description asking for far larger weights than the file holds is refused before it takes the
  // memory (300 million units: 2.2 GiB), and one past 2^63 elements too.
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["layers"][0]["config"]["units"] = 300000000; })), OutOfMemory,
                        message_has({"layer 'dense'", "while building the model", "the largest"}));
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["layers"][0]["config"]["units"] = std::int64_t{1} << 62; })),
                        Error, message_has({"layer 'dense'", "more elements than 2^63"}));
  // A vocabulary whose characters are out of order would give other tokens than training's.
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["vocabulary"] = {{"tokenizer", "character"}, {"characters", "ba"}}; })),
                        ValueError, message_has({"vocabulary", "not each once in order"}));
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["vocabulary"] = {{"tokenizer", "words"}}; })), ValueError,
                        message_has({"vocabulary needs a \"tokenizer\""}));
}

// Loads `path` and checks that the model comes back compiled as `model` was, and trains on as it does.
void expect_same_compile(Sequential& model, const std::string& path, const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    model.save(path);
    Model loaded = load_model(path);
    BOOST_REQUIRE(loaded.compiled());
    BOOST_TEST((loaded.recipe() == model.recipe()), loaded.recipe().str() << " against " << model.recipe().str());
    BOOST_TEST(loaded.loss().name() == model.loss().name());
    BOOST_TEST((loaded.loss().config() == model.loss().config()));
    BOOST_REQUIRE(loaded.metrics().size() == model.metrics().size());
    for (std::size_t i = 0; i < model.metrics().size(); ++i) BOOST_TEST(loaded.metrics()[i].name() == model.metrics()[i].name());
    const Dataset data = test::blobs(40, 3);
    const FitOptions options{.epochs = 2, .batch_size = 4, .seed = 5, .verbose = 0};
    model.fit(data, options);
    loaded.fit(data, options);
    for (std::size_t i = 0; i < model.parameters().size(); ++i)
      BOOST_TEST((loaded.parameters()[i].to_vector<float>() == model.parameters()[i].to_vector<float>()), "parameter " << i);
  }
}

BOOST_AUTO_TEST_CASE(the_compile_settings_come_back_with_the_model) {
  test::TempDir dir{"model_file_compile"};
  const std::string path = (dir.path / "m.safetensors").string();
  const auto mlp = [] {
    manual_seed(12);
    return Sequential{layers::Input{6}, layers::Dense{8}, layers::ReLU{}, layers::Dense{4}};
  };
  Sequential adamw = mlp();
  adamw.compile(optim::AdamW{.lr = 3e-3, .betas = {0.8, 0.95}, .weight_decay = 0.05, .amsgrad = true}
                    .accumulate({{0, 4}, {1, 2}}, {.last_window = LastWindow::drop, .normalization = Normalization::per_micro_batch})
                    .clip(0.5, {.error_if_nonfinite = true})
                    .amp(optim::AmpOptions{.dtype = DType::bf16, .scaler = {.init_scale = 1024.0}}),
                losses::CrossEntropy{.label_smoothing = 0.1f, .ignore_index = 2}, {metrics::Accuracy{}, metrics::MeanLoss{}});
  expect_same_compile(adamw, path, "AdamW, accumulation per epoch, clipping, bfloat16");
  Sequential sgd = mlp();
  sgd.compile(optim::SGD{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4, .nesterov = true}
                  .accumulate(AccumulationSchedule::by_step({{0, 2}, {3, 3}}), {.weight_gradients = WeightGradients::per_window})
                  .clip_value(0.25),
              losses::CrossEntropy{.reduction = Reduction::sum});
  expect_same_compile(sgd, path, "SGD with Nesterov momentum, accumulation by step, clip_value");
  Sequential adam = mlp();
  adam.compile(optim::Adam{.lr = 1e-2, .eps = 1e-6}.effective_batch(8).memory_budget(std::size_t{64} << 20),
               losses::CrossEntropy{}, {metrics::Accuracy{}});
  expect_same_compile(adam, path, "Adam, effective batch and memory budget");
  for (const optim::AnyOptimizer& o :
       {optim::AnyOptimizer{optim::RMSprop{.lr = 1e-3, .alpha = 0.9, .weight_decay = 1e-4, .momentum = 0.5, .centered = true}},
        optim::AnyOptimizer{optim::Adagrad{.lr = 0.1, .lr_decay = 0.01, .initial_accumulator_value = 0.1}},
        optim::AnyOptimizer{optim::LARS{.lr = 0.5, .weight_decay = 1e-4, .exclude = {.vectors = false, .names = {"bias", "3.weight"}},
                                        .larc_clip = true}},
        optim::AnyOptimizer{optim::LAMB{.lr = 2e-3, .betas = {0.9, 0.98}, .exclude = {.names = {"1.weight"}}, .bias_correction = false}},
        optim::AnyOptimizer{optim::Lion{.lr = 3e-4, .betas = {0.95, 0.98}, .weight_decay = 0.1}}}) {
    Sequential m = mlp();
    m.compile(optim::Recipe{o}.accumulate(2), losses::CrossEntropy{});
    expect_same_compile(m, path, o.str());
  }
  // A damaged part is refused, named.
  serialization::SafetensorsFile file = serialization::load_safetensors(path);
  nlohmann::json j = nlohmann::json::parse(file.metadata.at("accrue.model"));
  j["compile"]["optimizer"]["type"] = "Yogi";
  file.metadata["accrue.model"] = j.dump();
  serialization::save_safetensors(path, file.tensors, file.metadata);
  BOOST_CHECK_EXCEPTION(load_model(path), ValueError,
                        message_has({path, "compile settings", "optimizer 'Yogi' is none of SGD, Adam, AdamW, RMSprop"}));
  // A loss of the user's own cannot be in a file: the model comes back uncompiled, and says why.
  Sequential own = mlp();
  own.compile(optim::SGD{}, Loss([](const Tensor& p, const Tensor&) { return ops::sum(p); }, "my_loss"));
  own.save(path);
  BOOST_TEST(!load_model(path).compiled());
  Sequential plain = mlp();
  plain.save(path);
  BOOST_TEST(!load_model(path).compiled());
}

BOOST_AUTO_TEST_CASE(a_text_models_vocabulary_comes_back_with_it) {
  manual_seed(11);
  test::TempDir dir{"model_file_vocabulary"};
  const std::string path = (dir.path / "m.safetensors").string();
  for (const auto tokenizer : {datasets::Tokenizer::character, datasets::Tokenizer::byte}) {
    const datasets::Vocabulary vocabulary{"h\u00e9llo w\u00f6rld, \u00e7a va? \U0001F642\n", tokenizer};
    const std::int64_t V = vocabulary.size();
    Sequential gpt{layers::Input{8}, layers::Embedding{V, 16}, layers::PositionalEmbedding{8},
                   layers::TransformerBlock{2, 16, {.causal = true}}, layers::LayerNorm{}, layers::Dense{V}};
    gpt.build(Shape{8});
    BOOST_TEST(gpt.vocabulary() == nullptr);
    gpt.set_vocabulary(vocabulary);
    gpt.save(path);
    Model loaded = load_model(path);
    BOOST_REQUIRE(loaded.vocabulary() != nullptr);
    BOOST_TEST((*loaded.vocabulary() == vocabulary));
    const std::vector<std::int32_t> prompt = loaded.vocabulary()->encode("h\u00e9llo");
    const GenerateOptions greedy{.max_tokens = 12, .temperature = 0.0f};
    BOOST_TEST(loaded.vocabulary()->decode(loaded.generate(prompt, greedy)) == vocabulary.decode(gpt.generate(prompt, greedy)));
  }
}

BOOST_AUTO_TEST_CASE(a_loaded_model_predicts_on_four_threads_at_once_as_on_one) {
  manual_seed(4);
  Sequential model{layers::Input{1, 12, 12}, layers::Conv2d{4, 3}, layers::BatchNorm2d{}, layers::ReLU{},
                   layers::Dropout{0.5f}, layers::Flatten{}, layers::Dense{3}};
  test::TempDir dir{"model_file_threads"};
  const std::string path = (dir.path / "m.safetensors").string();
  model.save(path);
  Model loaded = load_model(path);
  std::vector<Tensor> inputs;
  std::vector<std::vector<float>> alone;
  for (std::uint64_t k = 0; k < 4; ++k) {
    inputs.push_back(images(9, {1, 12, 12}, 10 + k));
    alone.push_back(loaded.predict(inputs.back(), 4).to_vector<float>());
  }
  std::vector<std::vector<float>> together(4);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int repeat = 0; repeat < 20; ++repeat) together[k] = loaded.predict(inputs[k], 4).to_vector<float>();
    });
  for (auto& t : threads) t.join();
  for (std::size_t k = 0; k < 4; ++k) BOOST_TEST((together[k] == alone[k]), "thread " << k);
}

// A ResNet (models::resnet18: a graph of projection shortcuts, its layers named as torchvision's
// modules) comes back from its file with the same names and the same outputs, bit for bit.
BOOST_AUTO_TEST_CASE(a_resnet_comes_back_with_torchvisions_names) {
  TempDir dir{"model_file_resnet"};
  manual_seed(3);
  Model net = models::resnet18({.num_classes = 7, .input_shape = {3, 32, 32}});
  const Tensor x = random_tensor({2, 3, 32, 32}, 9);
  net.save(dir.file("resnet18.safetensors"));
  Model loaded = load_model(dir.file("resnet18.safetensors"));
  BOOST_TEST(loaded.name() == "resnet18");
  BOOST_TEST(loaded.layer("layer2.0.downsample.1").type_name() == "BatchNorm2d");
  BOOST_TEST(loaded.named_state().size() == net.named_state().size());
  BOOST_TEST(loaded.predict(x).to_vector<float>() == net.predict(x).to_vector<float>());
}
