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

/// Two inputs of 5 values and their class (of 3): the largest of the first three sums left + right.
struct TwoInputs {
  Tensor left, right, labels;
};

inline TwoInputs two_inputs(std::int64_t n, std::uint64_t seed) {
  Generator gen{seed};
  const Tensor left = Tensor::normal({n, 5}, 0.0f, 1.0f, &gen), right = Tensor::normal({n, 5}, 0.0f, 1.0f, &gen);
  const std::vector<float> l = left.to_vector(), r = right.to_vector();
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < y.size(); ++i)
    for (std::int32_t c = 1; c < 3; ++c)
      if (l[i * 5 + c] + r[i * 5 + c] > l[i * 5 + y[i]] + r[i * 5 + y[i]]) y[i] = c;
  return {left, right, Tensor::from(y, {n})};
}

/// The rows of `x` (and of `y`, when given, as targets) read one by one, not held as tensors: what
/// loaders read on background threads.
inline Dataset read_one_by_one(const Tensor& x, const std::string& name, const Tensor& y = {}) {
  const auto row = [](const Tensor& t, std::int64_t i) { return ops::narrow(t, i, i + 1).reshape(t.shape().drop_front()); };
  return Dataset::from(
      x.size(0),
      [=](std::int64_t i) {
        return accrue::Example{std::vector<Tensor>{row(x, i)}, y.defined() ? std::vector<Tensor>{row(y, i)} : std::vector<Tensor>{}};
      },
      name);
}

/// Every parameter's values, in order, in one list.
inline std::vector<float> flat_parameters(const Model& m) {
  std::vector<float> all;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.to_vector();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

/// Two inputs and two outputs: a class of 3 ("label") off every merge of the zoo's graph, and a
/// score ("score") off the nested encoder's first call.
inline Model two_headed() {
  manual_seed(31);
  const zoo::TwoInputGraph g = zoo::two_input_graph();
  return Model{{g.left, g.right}, {layers::Dense{3, {.name = "label"}}(g.merged), layers::Dense{1, {.name = "score"}}(g.a)}};
}

/// Cross-entropy and accuracy for "label", MSE weighing 0.5 for "score".
inline void compile_two_headed(Model& m, optim::Recipe recipe) {
  m.compile(std::move(recipe), {{"label", {.loss = losses::CrossEntropy{}, .metrics = {metrics::Accuracy{}}}},
                                {"score", {.loss = losses::MSE{}, .weight = 0.5}}});
}

/// Each sample's score: the sum of its left input's values, (n, 1).
inline Tensor scores_of(const TwoInputs& t) { return ops::sum(t.left, 1, true); }

/// Sequences of 4 steps of 6 values, and two heads per step: "tags" (5 classes) and "moods" (3).
inline Model token_heads() {
  manual_seed(41);
  layers::Input x{{4, 6}, {.name = "x"}};
  const Symbol h = layers::Tanh{}(layers::Dense{8}(x));
  return Model{x, {layers::Dense{5, {.name = "tags"}}(h), layers::Dense{3, {.name = "moods"}}(h)}};
}

/// `n` sequences for token_heads whose two label sets leave out (ignore_index) different, uneven
/// parts: tags the last i % 4 steps of sample i, moods the first 3i % 4.
inline Dataset uneven_tokens(std::int64_t n, std::uint64_t seed) {
  Generator gen{seed};
  const Tensor x = Tensor::normal({n, 4, 6}, 0.0f, 1.0f, &gen);
  std::vector<std::int32_t> tags(static_cast<std::size_t>(n * 4)), moods(tags.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t t = 0; t < 4; ++t) {
      const auto at = static_cast<std::size_t>(i * 4 + t);
      tags[at] = t >= 4 - i % 4 ? -100 : static_cast<std::int32_t>(gen.below(5));
      moods[at] = t < (3 * i) % 4 ? -100 : static_cast<std::int32_t>(gen.below(3));
    }
  return Dataset{{x}, {Tensor::from(tags, {n, 4}), Tensor::from(moods, {n, 4})}, "uneven tokens"};
}

/// tests/data/make_graph_reference.py's model in Accrue: a Dense shared by both inputs, their
/// concatenation, a Dense whose output adds the concatenation back (a skip connection), a class head
/// on that and a score head on the shared Dense's outputs added.
inline Model pytorch_twin() {
  layers::Input left{{6}, {.name = "left"}}, right{{6}, {.name = "right"}};
  layers::Dense shared{8, {.name = "shared"}};
  const Symbol a = shared(left), b = shared(right);
  const Symbol h = layers::ReLU{}(layers::Concatenate{}({a, b}));
  const Symbol s = layers::ReLU{}(layers::Add{}({layers::Dense{16, {.name = "mix"}}(h), h}));
  return Model{{left, right}, {layers::Dense{3, {.name = "label"}}(s), layers::Dense{1, {.name = "score"}}(layers::Add{}({a, b}))}};
}

/// A Transformer whose key-padding mask is an input of its own: tokens (5,) and padding (5,), both
/// int32, an Embedding of 11 tokens, a TransformerBlock given both, and 3 classes.
inline Model masked_transformer() {
  layers::Input tokens{{5}, {.name = "tokens", .dtype = DType::i32}}, padding{{5}, {.name = "padding", .dtype = DType::i32}};
  const Symbol h = layers::Embedding{11, 8}(tokens);
  const Symbol encoded = layers::TransformerBlock{2, 8, {.mlp_dim = 16, .dropout = 0.0f}}({h, padding});
  return Model{{tokens, padding}, layers::Dense{3}(layers::Flatten{}(encoded))};
}

/// Tokens for masked_transformer and their padding: none in sample 0, the last 2 in sample 1, the
/// last 4 in sample 2, the first in sample 3.
inline std::vector<Tensor> masked_tokens() {
  const std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 9, 10, 0, 0, 0, 0, 3, 5, 7, 9};
  const std::vector<std::int32_t> padding{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  return {Tensor::from(tokens, {4, 5}), Tensor::from(padding, {4, 5})};
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
