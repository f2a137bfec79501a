// Layers for sequences: their contracts (gradients against finite differences, copies), the
// layers made of layers, and parity with PyTorch for Embedding, nn.MultiheadAttention,
// nn.TransformerEncoderLayer, nn.LSTM and nn.GRU (tests/data/pytorch_sequence_layers.json, made by
// tests/data/make_sequence_layer_reference.py).

#include "../pytorch_reference.hpp"

using namespace accrue;
using namespace accrue::test;
using json = nlohmann::json;

namespace {

void expect_contract(const Layer& layer, const Shape& sample, LayerCheckOptions options = {}) {
  const LayerCheckResult r = check_layer(layer, sample, options);
  BOOST_CHECK_MESSAGE(r.ok, layer.type_name() << " on " << sample.str() << ":\n" << r.report);
}

std::vector<std::string> names_of(const Layer& layer) {
  std::vector<std::string> names;
  for (const auto& [name, p] : layer.named_parameters()) names.push_back(name);
  return names;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sequence_layers_keep_their_contract) {
  expect_contract(layers::PositionalEmbedding{8}, {5, 4});
  expect_contract(layers::SinusoidalEncoding{8}, {5, 4});
  expect_contract(layers::MultiHeadAttention{2, 6}, {5, 6});
  expect_contract(layers::MultiHeadAttention{3, 6, {.causal = true, .bias = false}}, {4, 6});
  expect_contract(layers::TransformerBlock{2, 4, {.mlp_dim = 8, .dropout = 0.0f, .causal = true}}, {5, 4});
  expect_contract(layers::Residual{layers::LayerNorm{}, layers::Dense{4}, layers::GELU{}}, {3, 4});
  expect_contract(layers::LSTM{3}, {4, 2});
  expect_contract(layers::LSTM{3, {.layers = 2, .return_sequences = false}}, {4, 2});
  expect_contract(layers::GRU{3}, {4, 2});
  expect_contract(layers::GRU{2, {.layers = 2, .return_sequences = false, .bias = false}}, {3, 2});
}

BOOST_AUTO_TEST_CASE(layers_made_of_layers_name_copy_and_move_their_parameters_together) {
  layers::TransformerBlock block{2, 4, {.mlp_dim = 8}};
  Generator generator{3};
  block.ensure_built({5, 4}, generator);
  const std::vector<std::string> expected = {
      "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
      "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
      "norm2.weight", "norm2.bias"};
  BOOST_TEST(names_of(block) == expected, boost::test_tools::per_element());
  BOOST_TEST(block.parameter_count() == 3 * 16 + 12 + 16 + 4 + 32 + 8 + 32 + 4 + 16);
  // A copy shares nothing with the original, and its listed parameters are those its sub-layers use.
  auto copy = block.clone();
  Tensor{copy->named_parameters().at(6).second}.fill_(0.0f);  // linear2.weight
  Tensor{copy->named_parameters().at(7).second}.fill_(0.0f);  // linear2.bias
  BOOST_TEST(block.named_parameters().at(6).second.to_vector()[0] != 0.0f);
  const Tensor x = Tensor::uniform({2, 5, 4}, -1, 1, &generator);
  const NoGradGuard no_grad;
  copy->set_training(false);
  block.set_training(false);
  // The copy's linear2 is the zeroed one: its MLP adds nothing, the original's does.
  const std::vector<float> y_copy = copy->forward(x).to_vector(), y = block.forward(x).to_vector();
  BOOST_TEST(y_copy != y);
  // Training mode reaches the sub-layers.
  BOOST_CHECK_NO_THROW(copy->set_training(true));
  layers::Residual residual{layers::Dense{4}, layers::Dropout{0.5f}};
  residual.ensure_built({4}, generator);
  BOOST_TEST(names_of(residual) == (std::vector<std::string>{"0.weight", "0.bias"}), boost::test_tools::per_element());
  residual.set_training(false);
  const Tensor r = Tensor::uniform({3, 4}, -1, 1, &generator);
  const std::vector<float> twice_a = residual.forward(r).to_vector(), twice_b = residual.forward(r).to_vector();
  BOOST_TEST(twice_a == twice_b, boost::test_tools::per_element());  // no dropout in evaluation
  BOOST_CHECK_THROW((layers::Residual{layers::Dense{3}}.ensure_built({4}, generator)), ShapeError);
}

BOOST_AUTO_TEST_CASE(embedding_looks_up_rows_and_leaves_padding_alone) {
  layers::Embedding embedding{7, 3, {.padding_idx = 2}};
  Generator generator{5};
  embedding.ensure_built({4}, generator);
  BOOST_TEST(embedding.output_shape() == Shape({4, 3}));
  const std::vector<float> pad_row = ops::slice(embedding.weight(), 0, 2, 3).to_vector();
  BOOST_TEST(pad_row == std::vector<float>(3, 0.0f), boost::test_tools::per_element());
  const Tensor tokens = Tensor::from(std::vector<std::int32_t>{1, 2, 2, 6, 0, 1, 3, 2}, {2, 4});
  const Tensor y = embedding.forward(tokens);
  BOOST_TEST(y.shape() == Shape({2, 4, 3}));
  ops::sum(y).backward();
  const std::vector<float> grad = embedding.weight().grad().to_vector();
  BOOST_TEST(grad[1 * 3] == 2.0f);  // token 1 twice
  BOOST_TEST(grad[2 * 3] == 0.0f);  // padding: none
  BOOST_TEST(grad[6 * 3] == 1.0f);
  BOOST_CHECK_EXCEPTION(embedding.forward(Tensor::from(std::vector<std::int32_t>{1, 7}, {1, 2})), ValueError,
                        test::message_has({"index 7", "position 1", "[0, 7)"}));
  BOOST_CHECK_THROW(embedding.forward(Tensor::zeros({1, 4})), Error);
  // The sinusoidal table: sin at even features, cos at odd ones.
  layers::SinusoidalEncoding positions{16};
  positions.ensure_built({3, 4}, generator);
  const std::vector<float> pe = positions.named_buffers().at(0).second.to_vector();
  BOOST_TEST(pe[0] == 0.0f);
  BOOST_TEST(pe[1] == 1.0f);
  BOOST_TEST(pe[1 * 4 + 0] == std::sin(1.0f), boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(pe[1 * 4 + 3] == static_cast<float>(std::cos(1.0 / 100.0)), boost::test_tools::tolerance(1e-6f));
  BOOST_CHECK_THROW(layers::SinusoidalEncoding{2}.ensure_built({3, 4}, generator), ShapeError);
}

BOOST_AUTO_TEST_CASE(sequence_layers_match_pytorch) {
  const json ref = test::pytorch_reference("pytorch_sequence_layers.json");
  for (const json& c : ref["cases"]) {
    const std::string name = c["name"], type = c["config"]["type"];
    const json& config = c["config"];
    std::unique_ptr<Layer> layer;
    if (type == "embedding")
      layer = std::make_unique<layers::Embedding>(config["vocab"], config["dim"],
                                                  layers::EmbeddingOptions{.padding_idx = config["padding_idx"]});
    else if (type == "attention")
      layer = std::make_unique<layers::MultiHeadAttention>(config["heads"], config["dim"],
                                                           layers::MultiHeadAttentionOptions{.causal = config["causal"]});
    else if (type == "lstm" || type == "gru") {
      const layers::RecurrentOptions options{.layers = config["layers"], .return_sequences = config["return_sequences"]};
      if (type == "lstm") layer = std::make_unique<layers::LSTM>(config["hidden"], options);
      else layer = std::make_unique<layers::GRU>(config["hidden"], options);
    } else
      layer = std::make_unique<layers::TransformerBlock>(
          config["heads"], config["dim"],
          layers::TransformerBlockOptions{.mlp_dim = config["mlp_dim"], .dropout = 0.0f, .causal = config["causal"]});
    const bool tokens = type == "embedding";
    Tensor x = tensor_of(c["x"], tokens ? DType::i32 : DType::f32);
    if (!tokens) x.set_requires_grad(true);
    Generator generator{1};
    layer->ensure_built(x.shape().drop_front(), generator);
    BOOST_REQUIRE_EQUAL(layer->named_parameters().size(), c["params"].size());
    for (const auto& [pname, p] : layer->named_parameters()) {
      BOOST_REQUIRE_MESSAGE(c["params"].contains(pname), name << ": PyTorch has no parameter " << pname);
      Tensor{p}.copy_(tensor_of(c["params"][pname]));
    }
    Tensor y;
    if (config.contains("key_padding")) {
      const Tensor padding = Tensor::from(config["key_padding"].get<std::vector<std::int32_t>>(), {x.size(0), x.size(1)});
      y = dynamic_cast<layers::MultiHeadAttention&>(*layer).forward(x, padding);
    } else {
      y = layer->forward(x);
    }
    expect_close(y, c["y"], name + " output", 1e-5);
    ops::sum(y * tensor_of(c["g"])).backward();
    if (!tokens) expect_close(x.grad(), c["grad_x"], name + " input gradient", 1e-5);
    for (const auto& [pname, p] : layer->named_parameters())
      expect_close(p.grad(), c["grad_params"][pname], name + " gradient of " + pname, 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(a_causal_model_generates_repeatably_from_a_seed) {
  manual_seed(9);
  Sequential model{layers::Input{8}, layers::Embedding{11, 8}, layers::PositionalEmbedding{8},
                   layers::TransformerBlock{2, 8, {.dropout = 0.1f, .causal = true}}, layers::LayerNorm{},
                   layers::Dense{11}};
  // Causal: the logits at position i do not depend on the tokens after it, which is why generate
  // may right-pad the window.
  const std::vector<std::int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8}, b = {1, 2, 3, 4, 9, 0, 10, 0};
  model.set_training(false);
  const std::vector<float> la = model(Tensor::from(a, {1, 8})).to_vector(), lb = model(Tensor::from(b, {1, 8})).to_vector();
  for (std::size_t i = 0; i < 4 * 11; ++i) BOOST_TEST(la[i] == lb[i]);
  BOOST_TEST(la[4 * 11] != lb[4 * 11]);
  model.set_training(true);

  const std::vector<std::int32_t> prompt = {3, 1, 4};
  const auto first = model.generate(prompt, {.max_tokens = 12, .seed = 5});
  BOOST_TEST(first.size() == 12u);
  BOOST_TEST(model.generate(prompt, {.max_tokens = 12, .seed = 5}) == first, boost::test_tools::per_element());
  BOOST_TEST(model.training());  // generation runs in evaluation mode and puts the mode back
  const auto greedy = model.generate(prompt, {.max_tokens = 12, .temperature = 0.0f});
  BOOST_TEST(model.generate(prompt, {.max_tokens = 12, .top_k = 1, .seed = 77}) == greedy,
             boost::test_tools::per_element());
  for (const std::int32_t t : first) BOOST_TEST((t >= 0 && t < 11));
  // A prompt longer than the window keeps its last 8 tokens.
  std::vector<std::int32_t> long_prompt(20, 2);
  long_prompt.insert(long_prompt.end(), prompt.begin(), prompt.end());
  BOOST_TEST(model.generate(long_prompt, {.max_tokens = 3, .temperature = 0.0f}).size() == 3u);
  BOOST_CHECK_THROW(model.generate({}, {}), ValueError);
  Sequential classifier{layers::Input{4}, layers::Dense{3}};
  BOOST_CHECK_EXCEPTION(classifier.generate({1}), Error, test::message_has({"(T, vocabulary)"}));
}

BOOST_AUTO_TEST_CASE(a_tiny_gpt_trains_as_pytorch_trains_it) {
  // examples/07_char_lm's model, small: AdamW, clipping, micro-batches of 3 accumulated 2, from
  // PyTorch's initial weights; four steps give PyTorch's losses and parameters.
  const json ref = test::pytorch_reference("pytorch_sequence_layers.json")["training"];
  Sequential model{layers::Input{8}, layers::Embedding{11, 8}, layers::PositionalEmbedding{8},
                   layers::TransformerBlock{2, 8, {.mlp_dim = 16, .dropout = 0.0f, .causal = true}}, layers::LayerNorm{},
                   layers::Dense{11}};
  for (auto& [name, p] : model.named_parameters()) {
    BOOST_REQUIRE_MESSAGE(ref["initial"].contains(name), "PyTorch's reference has no parameter " << name);
    Tensor{p}.copy_(tensor_of(ref["initial"][name]));
  }
  model.compile(optim::AdamW{.lr = 1e-2, .weight_decay = 0.1}.accumulate(2).clip(1.0), losses::CrossEntropy{});
  std::vector<double> step_losses;
  double window_loss = 0.0;
  callbacks::Lambda losses{{.micro_batch_end = [&](const StepRecord& r, const Logs&) {
    window_loss += r.loss / 2;
    if (r.closes_window()) step_losses.push_back(std::exchange(window_loss, 0.0));
  }}};
  model.fit(Dataset{tensor_of(ref["x"], DType::i32), tensor_of(ref["y"], DType::i32)},
            {.epochs = 2, .batch_size = 3, .callbacks = {losses}, .shuffle = false, .verbose = 0});
  const auto expected = ref["step_losses"].get<std::vector<double>>();
  BOOST_REQUIRE_EQUAL(step_losses.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    BOOST_TEST(step_losses[i] == expected[i], boost::test_tools::tolerance(1e-5));
  for (const auto& [name, p] : model.named_parameters()) {
    if (name != "2.self_attn.in_proj_bias") {
      expect_close(p, ref["final"][name], "after 4 steps, " + name, 1e-5);
      continue;
    }
    // The keys' bias adds the same q.b to every score of a query, which softmax ignores: its true
    // gradient is zero, what both frameworks compute is rounding noise, and Adam turns any noise
    // into steps of about lr. Those entries are only checked to stay within 4 such steps; the
    // queries' and values' biases must match.
    std::vector<float> got = p.to_vector(), want = tensor_of(ref["final"][name]).to_vector();
    for (std::size_t i = 8; i < 16; ++i) {
      BOOST_TEST(std::abs(got[i]) <= 4 * 1e-2 + 1e-6);
      got[i] = want[i] = 0.0f;
    }
    test::check_close(got, want, 1e-5, 1e-5, "after 4 steps, in_proj_bias without the keys' part");
  }
}
