#pragma once
// The models a trained model must leave Accrue as: the tutorial's MLP, CNNs with BatchNorm and
// with GroupNorm, LSTM and GRU classifiers over padded tokens, and a character-level GPT. The
// whole-model file (test_model_file) and the ONNX export (test_onnx_export) are tested on each.

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <accrue/accrue.hpp>
#include <accrue/dsl/layer_registry.hpp>
#include <accrue/framework/serialization/safetensors.hpp>

namespace accrue::test::zoo {

inline Tensor images(std::int64_t n, const Shape& sample, std::uint64_t seed) {
  Generator g{seed};
  return Tensor::uniform(sample.prepend(n), -1.0f, 1.0f, &g);
}

/// n rows of `length` tokens in [1, vocabulary), padded with 0 from position padded_from (one
/// more in every other row).
inline Tensor tokens(std::int64_t n, std::int64_t length, std::int64_t vocabulary, std::int64_t padded_from) {
  std::vector<std::int32_t> t;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t p = 0; p < length; ++p)
      t.push_back(p >= padded_from + i % 2 ? 0 : static_cast<std::int32_t>(1 + (i * 7 + p * 3) % (vocabulary - 1)));
  return Tensor::from(t, {n, length});
}

/// A model with 7 inputs and labels to train it on.
struct Example {
  std::string name;
  std::function<Sequential()> make;
  Tensor x, y;
};

inline std::vector<Example> image_models() {
  const Tensor x = images(7, {1, 12, 12}, 2);
  const Tensor y = Tensor::from(std::vector<std::int32_t>{0, 1, 2, 3, 0, 1, 2}, {7});
  return {
      {"MLP",
       [] {
         return Sequential{layers::Input{1, 12, 12}, layers::Flatten{}, layers::Dense{32}, layers::ReLU{},
                           layers::Dropout{0.25f}, layers::Dense{4}};
       },
       x, y},
      {"CNN with BatchNorm",
       [] {
         return Sequential{layers::Input{1, 12, 12},
                           layers::Conv2d{6, 3, {.padding = layers::same}},
                           layers::BatchNorm2d{},
                           layers::ReLU{},
                           layers::MaxPool2d{2},
                           layers::Conv2d{8, {3, 1}, {.stride = {1, 2}, .padding = {1, 0}, .dilation = 1, .bias = false}},
                           layers::BatchNorm2d{{.momentum = std::nullopt, .eps = 1e-3f}},
                           layers::AvgPool2d{2, {.stride = 1, .padding = 1, .count_include_pad = false}},
                           layers::Flatten{},
                           layers::BatchNorm1d{},
                           layers::Dense{4}};
       },
       x, y},
      {"CNN with GroupNorm",
       [] {
         return Sequential{layers::Input{1, 12, 12},
                           layers::Conv2d{8, 3, {.groups = 1}},
                           layers::GroupNorm{4},
                           layers::GELU{{.tanh_approximation = true}},
                           layers::Conv2d{8, 3, {.dilation = 2, .groups = 2}},
                           layers::Tanh{},
                           layers::GlobalAvgPool2d{},
                           layers::Dense{4},
                           layers::Sigmoid{}};
       },
       x, y},
  };
}

inline std::vector<Example> sequence_models() {
  const Tensor x = tokens(6, 8, 11, 5);
  const Tensor y = Tensor::from(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2}, {6});
  return {
      {"LSTM classifier",
       [] {
         return Sequential{layers::Input{8}, layers::Embedding{11, 6, {.padding_idx = 0}},
                           layers::LSTM{5, {.layers = 2, .return_sequences = false}}, layers::Dense{3}};
       },
       x, y},
      {"GRU classifier",
       [] {
         return Sequential{layers::Input{8}, layers::Embedding{11, 6, {.padding_idx = 0}},
                           layers::GRU{5, {.return_sequences = false, .bias = false}}, layers::Dense{3}};
       },
       x, y},
      // Causal attention, LayerNorm, GELU inside its blocks; per-token targets.
      {"GPT",
       [] {
         return Sequential{layers::Input{8},
                           layers::Embedding{11, 16},
                           layers::PositionalEmbedding{8},
                           layers::TransformerBlock{2, 16, {.mlp_dim = 24, .dropout = 0.1f, .causal = true}},
                           layers::Residual{layers::LayerNorm{},
                                            layers::MultiHeadAttention{4, 16, {.causal = true, .bias = false}}},
                           layers::LayerNorm{{.eps = 1e-6f}},
                           layers::Dense{11}};
       },
       x, tokens(6, 8, 11, 8)},
  };
}

/// Trains `model` one Adam step on the example's data, so that weights, running statistics and
/// the optimizer have moved from their starting values.
inline void train_one_step(Sequential& model, const Example& e) {
  model.compile(optim::Adam{.lr = 1e-2}, losses::CrossEntropy{});
  model.fit(Dataset{e.x, e.y}, {.epochs = 1, .batch_size = e.x.shape()[0], .verbose = 0});
}

/// A layer of a user's own as layer_registry.hpp shows one: y = factor * x, with a configuration
/// (test_model_file registers it) and no ONNX form.
class Scale final : public LayerBase<Scale, "Scale"> {
 public:
  explicit Scale(double factor) : factor_(factor) {}
  static Scale from_config(const ConfigReader& c) { return Scale{c.number("factor")}; }
  LayerConfig config() const override { return {{"factor", factor_}}; }
  Tensor forward(const Tensor& x) override { return x * static_cast<float>(factor_); }

 private:
  double factor_;
};

/// The start of the graph tests' models (test_functional, test_onnx_export): two named inputs of
/// 5 features, a nested Sequential "encoder" (Dense, Tanh) called on both (a, b), a Dense shared by
/// both (c, d), and every merge of them concatenated.
struct TwoInputGraph {
  layers::Input left, right;
  Symbol a, b, c, d, merged;
};

inline TwoInputGraph two_input_graph() {
  layers::Input left{{5}, {.name = "left"}}, right{{5}, {.name = "right"}};
  Sequential encoder{layers::Dense{6}, layers::Tanh{}};
  encoder.set_name("encoder");
  layers::Dense shared{6};
  const Symbol a = encoder(left), b = encoder(right), c = shared(left), d = shared(right);
  const Symbol merged = layers::Concatenate{}({layers::Add{}({a, b}), layers::Subtract{}({a, b}), layers::Multiply{}({c, d}),
                                               layers::Average{}({a, b, c}), layers::Maximum{}({a, d}), layers::Minimum{}({b, c})});
  return {left, right, a, b, c, d, merged};
}

/// A copy of the model file `path` at `damaged` with its description (the JSON of "accrue.model")
/// changed by `change`; returns `damaged`.
inline std::string with_description(const std::string& path, const std::string& damaged,
                                    const std::function<void(nlohmann::json&)>& change) {
  serialization::SafetensorsFile file = serialization::load_safetensors(path);
  nlohmann::json j = nlohmann::json::parse(file.metadata.at("accrue.model"));
  change(j);
  file.metadata["accrue.model"] = j.dump();
  serialization::save_safetensors(damaged, file.tensors, file.metadata);
  return damaged;
}

}  // namespace accrue::test::zoo
