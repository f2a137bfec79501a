// Keras's functional API (model.hpp, symbol.hpp, layers/merge.hpp): merges, graphs with several
// inputs and outputs, shared layers, nested models, parts taken out, a layer of one's own with two
// inputs, and the errors found while a graph is written.

#include "../test_util.hpp"

#include "model_zoo.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

// The merge's output on `xs` (through its graph entry), after building it for their shapes.
Tensor merged(Layer& merge, const std::vector<Tensor>& xs) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(x.shape().drop_front());
  Generator g{1};
  merge.ensure_built_inputs(shapes, g);
  return merge.forward_inputs(xs);
}

void expect_merge_gradients(const Layer& prototype, const std::vector<Tensor>& xs) {
  std::unique_ptr<Layer> merge = prototype.clone();
  const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return merged(*merge, in); }, xs);
  BOOST_CHECK_MESSAGE(r.ok, prototype.type_name() << ": gradients differ from finite differences\n" << r.report);
}

// A gate of one's own with two inputs and a parameter: sigmoid(a * w) * b, w of a's last size.
class Gate final : public LayerBase<Gate, "Gate", MultiInputLayer> {
 public:
  Shape build(const std::vector<Shape>& input_shapes, Generator& generator) override {
    ACCRUE_CHECK_SHAPE(input_shapes[0] == input_shapes[1], "Gate takes two inputs of one shape");
    add_parameter("weight", Tensor::uniform({input_shapes[0][-1]}, -1.0f, 1.0f, &generator));
    return input_shapes[1];
  }
  Tensor forward(const std::vector<Tensor>& xs) override {
    return ops::mul(ops::sigmoid(ops::mul(xs[0], named_parameters()[0].second)), xs[1]);
  }
  static Gate from_config(const ConfigReader&) { return {}; }
};
ACCRUE_REGISTER_LAYER(Gate);

// The graphs of these tests in one model: two inputs, a shared Dense, a nested Sequential called
// twice, a Gate, every merge, two outputs.
Model every_kind_of_graph() {
  manual_seed(11);
  const zoo::TwoInputGraph g = zoo::two_input_graph();
  const Symbol gated = Gate{}({g.c, g.d});
  return Model{{g.left, g.right}, {layers::Dense{3, {.name = "label"}}(g.merged), layers::Dense{1, {.name = "score"}}(gated)}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(merge_layers_compute_as_keras_defines_them) {
  const Tensor a = random_tensor({4, 3}, 1), b = random_tensor({4, 3}, 2), c = random_tensor({4, 3}, 3);
  const auto check = [](Layer&& merge, const std::vector<Tensor>& xs, const Tensor& expected) {
    check_close(merged(merge, xs), expected, 0.0, 0.0, merge.type_name());
  };
  check(layers::Add{}, {a, b, c}, ops::add(ops::add(a, b), c));
  check(layers::Subtract{}, {a, b}, ops::sub(a, b));
  check(layers::Multiply{}, {a, b, c}, ops::mul(ops::mul(a, b), c));
  check(layers::Average{}, {a, b, c}, ops::div(ops::add(ops::add(a, b), c), Tensor::scalar(3.0f)));
  check(layers::Maximum{}, {a, b, c}, ops::maximum(ops::maximum(a, b), c));
  check(layers::Minimum{}, {a, b, c}, ops::minimum(ops::minimum(a, b), c));
  check(layers::Concatenate{}, {a, b}, ops::cat(std::vector<Tensor>{a, b}, 1));
  const Tensor image = random_tensor({2, 3, 4, 5}, 4), more = random_tensor({2, 2, 4, 5}, 5);
  check(layers::Concatenate{{.axis = 1}}, {image, more}, ops::cat(std::vector<Tensor>{image, more}, 1));
  check(layers::Concatenate{{.axis = -2}}, {image, random_tensor({2, 3, 1, 5}, 6)},
        ops::cat(std::vector<Tensor>{image, random_tensor({2, 3, 1, 5}, 6)}, 2));
  // Broadcasting as NumPy's: a (1, 3) sample beside a (4, 3) one.
  const Tensor row = random_tensor({2, 1, 3}, 7), block = random_tensor({2, 4, 3}, 8);
  check(layers::Add{}, {row, block}, ops::add(row, block));
}

BOOST_AUTO_TEST_CASE(merge_layers_have_finite_difference_gradients) {
  const auto leaves = [](int n, std::uint64_t seed, const Shape& s = {3, 4}) {
    std::vector<Tensor> out;
    for (int i = 0; i < n; ++i) out.push_back(leaf(random_tensor(s, seed + static_cast<std::uint64_t>(i))));
    return out;
  };
  expect_merge_gradients(layers::Add{}, leaves(3, 10));
  expect_merge_gradients(layers::Subtract{}, leaves(2, 20));
  expect_merge_gradients(layers::Multiply{}, leaves(3, 30));
  expect_merge_gradients(layers::Average{}, leaves(3, 40));
  expect_merge_gradients(layers::Concatenate{}, leaves(3, 50));
  expect_merge_gradients(layers::Concatenate{{.axis = 1}}, leaves(2, 55, {3, 2, 2}));
  // Values 0.1 apart at least, so that no finite difference crosses from one input to another.
  const auto apart = [](int n) {
    std::vector<Tensor> out;
    for (int i = 0; i < n; ++i) {
      std::vector<float> v(12);
      for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>((k * 7 + static_cast<std::size_t>(i) * 5) % 17) * 0.1f;
      out.push_back(leaf(Tensor::from(v, {3, 4})));
    }
    return out;
  };
  expect_merge_gradients(layers::Maximum{}, apart(3));
  expect_merge_gradients(layers::Minimum{}, apart(3));
  const GradcheckResult gate = gradcheck(
      [g = Gate{}](const std::vector<Tensor>& in) mutable { return merged(g, in); }, {leaf(random_tensor({3, 4}, 60)),
                                                                                      leaf(random_tensor({3, 4}, 61))});
  BOOST_CHECK_MESSAGE(gate.ok, "Gate: " << gate.report);
}

// Two inputs, a Dense shared by both, Concatenate, an Add skip and two heads: the graph computes
// what its layers compute when called by hand, in the order the layers were called.
BOOST_AUTO_TEST_CASE(a_graph_computes_what_its_layers_compute) {
  manual_seed(7);
  layers::Input left{{5}, {.name = "left"}}, right{{5}, {.name = "right"}};
  layers::Dense shared{8};
  const Symbol a = shared(left), b = shared(right);
  const Symbol joined = layers::Concatenate{}({a, b});
  const Symbol hidden = layers::Dense{8}(layers::ReLU{}(joined));
  const Symbol skip = layers::Add{}({hidden, a});
  Model model{{left, right}, {layers::Dense{3, {.name = "label"}}(skip), layers::Dense{1, {.name = "score"}}(skip)}};
  BOOST_TEST(model.input_count() == 2u);
  BOOST_TEST(model.output_count() == 2u);
  BOOST_TEST(model.input_name(1) == "right");
  BOOST_TEST(model.output_name(0) == "label");
  BOOST_TEST(model.output_name(1) == "score");
  // The shared Dense is one layer with one set of weights.
  BOOST_TEST(model.size() == 7u);
  BOOST_TEST(model.parameter_count() == (5 * 8 + 8) + (16 * 8 + 8) + (8 * 3 + 3) + (8 + 1));
  BOOST_TEST(model.named_parameters()[0].first == "dense.weight");
  BOOST_TEST(&model.layer("dense") == shared.called().get());

  const Tensor x = random_tensor({6, 5}, 1), y = random_tensor({6, 5}, 2);
  const std::vector<Tensor> out = model.forward({x, y});
  Layer& d = model.layer("dense");
  const Tensor ax = d.forward(x), by = d.forward(y);
  const Tensor h = model.layer("dense_1").forward(ops::relu(ops::cat(std::vector<Tensor>{ax, by}, 1)));
  const Tensor s = ops::add(h, ax);
  check_close(out[0], model.layer("label").forward(s), 0.0, 0.0, "label");
  check_close(out[1], model.layer("score").forward(s), 0.0, 0.0, "score");
  BOOST_CHECK_EXCEPTION(model.forward(x), ValueError, message_has({"2 inputs and 2 outputs"}));
  BOOST_CHECK_EXCEPTION(model.forward({x, random_tensor({5, 5}, 3)}), ShapeError, message_has({"'left'", "'right'", "(5, 5)"}));
}

// A layer called on two inputs gets the gradient of both uses; a gradient through the graph
// matches finite differences with respect to every input.
BOOST_AUTO_TEST_CASE(a_shared_layer_gets_the_gradient_of_every_call) {
  manual_seed(8);
  layers::Input x1{{4}}, x2{{4}};
  layers::Dense shared{3};
  Model model{{x1, x2}, layers::Multiply{}({shared(x1), layers::Tanh{}(shared(x2))})};
  BOOST_TEST(model.input_name(0) == "input");
  BOOST_TEST(model.input_name(1) == "input_1");
  const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return model.forward({in[0], in[1]})[0]; },
                                      {leaf(random_tensor({2, 4}, 4)), leaf(random_tensor({2, 4}, 5))});
  BOOST_CHECK_MESSAGE(r.ok, r.report);
  // The weight's gradient holds both calls' parts: central differences on each weight agree.
  const Tensor a = random_tensor({2, 4}, 6), b = random_tensor({2, 4}, 7);
  Tensor w = model.layer(0).named_parameters()[0].second;
  const auto loss = [&] { return ops::sum(model.forward({a, b})[0]).item(); };
  w.set_grad(Tensor());
  ops::sum(model.forward({a, b})[0]).backward();
  const std::vector<float> grad = w.grad().to_vector<float>();
  std::vector<float> values = w.to_vector<float>(), numeric(values.size());
  const NoGradGuard no_grad;
  for (std::size_t k = 0; k < values.size(); ++k) {
    const float kept = values[k];
    const auto at = [&](float v) {
      values[k] = v;
      w.copy_(Tensor::from(values, w.shape()));
      return loss();
    };
    numeric[k] = static_cast<float>((at(kept + 1e-2f) - at(kept - 1e-2f)) / 2e-2);
    at(kept);
  }
  check_close(grad, numeric, 2e-3, 1e-2, "the shared weight's gradient");
}

BOOST_AUTO_TEST_CASE(writing_a_wrong_graph_names_the_layer_and_shapes) {
  layers::Input a{{8}, {.name = "a"}}, b{{6}, {.name = "b"}}, c{{8}, {.name = "c"}};
  BOOST_CHECK_EXCEPTION(layers::Add{}({a, b}), ShapeError, message_has({"Add", "input 'a' (8,)", "input 'b' (6,)", "broadcast"}));
  BOOST_CHECK_EXCEPTION(layers::Concatenate{}({a, layers::Input{{2, 3}}}), ShapeError, message_has({"Concatenate", "(8,)", "(2, 3)"}));
  BOOST_CHECK_EXCEPTION(layers::Concatenate{{.axis = 0}}({a, c}), ShapeError, message_has({"axis = 0", "batch"}));
  BOOST_CHECK_EXCEPTION(layers::Subtract{}({a, c, a}), ShapeError, message_has({"Subtract", "takes 2 inputs, not 3"}));
  BOOST_CHECK_EXCEPTION(layers::Dense{4}({a, c}), ShapeError, message_has({"Dense", "takes 1 input, not 2"}));
  // A Dense built for (8) and called on (6).
  layers::Dense dense{4};
  const Symbol fine = dense(a);
  BOOST_CHECK_EXCEPTION(dense(b), ShapeError, message_has({"Dense", "built for input samples of shape (8,)", "(6,)"}));
  // An output that needs an input not given; an input no output uses; a symbol that is no input.
  BOOST_CHECK_EXCEPTION((Model{a, layers::Add{}({fine, layers::Dense{4}(c)})}), ValueError,
                        message_has({"needs input 'c' (8,)", "not among the model's inputs", "'a' (8,)"}));
  BOOST_CHECK_EXCEPTION((Model{{a, c}, fine}), ValueError, message_has({"input 'c' (8,) is not used"}));
  BOOST_CHECK_EXCEPTION((Model{fine, fine}), ValueError, message_has({"input 0", "not a layers::Input"}));
  BOOST_CHECK_EXCEPTION((Model{{a, a}, fine}), ValueError, message_has({"given twice"}));
  BOOST_CHECK_EXCEPTION((Model{{a, layers::Input{{8}, {.name = "a"}}}, fine}), ValueError, message_has({"two inputs named 'a'"}));
  // Two layers of one name.
  const Symbol one = layers::Dense{4, {.name = "twin"}}(a);
  BOOST_CHECK_EXCEPTION((Model{a, layers::Dense{4, {.name = "twin"}}(one)}), ValueError, message_has({"two layers named 'twin'"}));
  // A merge in a chain has one input.
  BOOST_CHECK_EXCEPTION((Sequential{layers::Input{4}, layers::Add{}}), ShapeError, message_has({"Add", "takes 2 or more inputs, not 1"}));
}

// Keras's "all models are callable": a Sequential and a functional model called inside another
// share their weights with it, their parameters named under their names; a part taken out shares
// its layers too.
BOOST_AUTO_TEST_CASE(nested_models_and_parts_taken_out_share_their_layers) {
  manual_seed(9);
  Sequential encoder{layers::Dense{6}, layers::ReLU{}};  // not built until called
  encoder.set_name("encoder");
  layers::Input first{{4}, {.name = "first"}}, second{{4}, {.name = "second"}};
  // A Siamese pair: one encoder for both, their distance scored.
  const Symbol distance = layers::Subtract{}({encoder(first), encoder(second)});
  Model siamese{{first, second}, layers::Dense{1, {.name = "same"}}(distance), {.name = "siamese"}};
  BOOST_TEST(encoder.built());
  BOOST_TEST(siamese.named_parameters()[0].first == "encoder.0.weight");
  BOOST_TEST(siamese.parameter_count() == (4 * 6 + 6) + (6 + 1));
  const Tensor x = random_tensor({3, 4}, 1), y = random_tensor({3, 4}, 2);
  const Tensor by_hand = siamese.layer("same").forward(ops::sub(encoder.forward(x), encoder.forward(y)));
  check_close(siamese.forward({x, y})[0], by_hand, 0.0, 0.0, "siamese");

  // The siamese model inside another, and a part of it taken out.
  layers::Input p{{4}}, q{{4}};
  Model outer{{p, q}, layers::Sigmoid{}(siamese({p, q}))};
  BOOST_TEST(outer.named_parameters()[0].first == "siamese.encoder.0.weight");
  check_close(outer.forward({x, y})[0], ops::sigmoid(by_hand), 0.0, 0.0, "nested");
  Model part{siamese.input(0), siamese.output_of("encoder.1")};
  BOOST_TEST(part.named_parameters()[0].first == "encoder.0.weight");
  check_close(part.forward(x), encoder.forward(x), 0.0, 0.0, "part");
  // One set of weights: a change through one model is seen by the others.
  Tensor{encoder.layer(0).named_parameters()[0].second}.fill_(0.5f);
  check_close(part.forward(x), encoder.forward(x), 0.0, 0.0, "part after the change");
  check_close(outer.forward({x, y})[0], ops::sigmoid(siamese.forward({x, y})[0]), 0.0, 0.0, "outer after the change");
  // A Sequential's own symbols: feature extraction from a chain.
  Sequential chain{layers::Input{4}, layers::Dense{5}, layers::Tanh{}, layers::Dense{2}};
  Model features{chain.input(), chain.output_of("tanh")};
  BOOST_TEST(features.named_parameters()[0].first == "0.weight");
  check_close(features.forward(x), chain.layer(1).forward(chain.layer(0).forward(x)), 0.0, 0.0, "features");
  BOOST_CHECK_EXCEPTION(chain.layer("nothing"), ValueError, message_has({"no layer named 'nothing'", "dense, tanh, dense_1"}));
}

// A graph model compiles and trains with fit as a Sequential does, and its windows of 4
// micro-batches equal one batch.
BOOST_AUTO_TEST_CASE(a_graph_model_trains_with_fit) {
  manual_seed(10);
  layers::Input in{{6}};
  const Symbol h = layers::Dense{16}(in);
  const Symbol branch = layers::Tanh{}(h);
  const Symbol gated = Gate{}({h, branch});
  Model model{in, layers::Dense{4}(layers::Concatenate{}({gated, layers::Maximum{}({h, branch})}))};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const Dataset data = blobs(256, 3);
  const double before = model.evaluate(data).loss;
  const History history = model.fit(data, {.epochs = 3, .batch_size = 32});
  BOOST_TEST(history.logs().back().at("loss") < before);
  BOOST_TEST(model.evaluate(data)["accuracy"] > 0.8);
  const AccumulationCheck check = verify_accumulation(model, data, {.sizes = {8, 8, 8, 5}});
  BOOST_TEST(check.max_relative_difference < 1e-5, check.str());
  BOOST_TEST(check.likely_causes.empty(), check.str());
}

// Reshape and Slice cut a symbol as Keras's Reshape and x[:, a:b] do; a graph of them saves and
// loads bit for bit, and a shape they cannot take is refused where the graph is written.
BOOST_AUTO_TEST_CASE(reshape_and_slice_cut_symbols) {
  manual_seed(9);
  layers::Input x{{12}, {.name = "x"}};
  const Symbol grid = layers::Reshape{{3, 4}}(x);
  const Symbol rows = layers::Slice{{.axis = 1, .begin = 1, .end = 3}}(grid);
  const Symbol head = layers::Slice{{.axis = -1, .begin = 0, .end = 2}}(grid);
  BOOST_TEST(rows.shape() == Shape({2, 4}));
  BOOST_TEST(head.shape() == Shape({3, 2}));
  Model model{x, layers::Dense{2}(layers::Concatenate{}({layers::Flatten{}(rows), layers::Reshape{{-1}}(head)}))};
  const Tensor input = random_tensor({5, 12}, 3);
  const Tensor as_grid = input.reshape({5, 3, 4});
  const Tensor by_hand = model.layer("dense").forward(
      ops::cat(std::vector<Tensor>{ops::flatten(ops::slice(as_grid, 1, 1, 3), 1), ops::flatten(ops::slice(as_grid, 2, 0, 2), 1)}, 1));
  check_close(model.predict(input), by_hand, 0.0, 0.0, "reshaped and sliced");

  test::TempDir dir{"reshape_slice"};
  model.save(dir.file("cut.safetensors"));
  check_close(load_model(dir.file("cut.safetensors")).predict(input), model.predict(input), 0.0, 0.0, "loaded");

  BOOST_CHECK_EXCEPTION((layers::Reshape{{5, -1}}(x)), ShapeError, message_has({"Reshape(5, -1) cannot hold samples of shape (12,)"}));
  BOOST_CHECK_EXCEPTION((layers::Slice{{.axis = -1, .begin = 2, .end = 6}}(grid)), ShapeError,
                        message_has({"reaches past samples of shape (3, 4)"}));
  BOOST_CHECK_EXCEPTION((layers::Slice{{.axis = 0, .end = 1}}(grid)), ShapeError, message_has({"0 is the batch"}));
  BOOST_CHECK_EXCEPTION(layers::Reshape({-1, -1}), ValueError, message_has({"at most one entry may be -1"}));
}

// A Transformer whose key-padding mask is an input of its own (nn.MultiheadAttention's
// key_padding_mask): the graph gives it to the block, which computes what it computes called by
// hand with the mask; the attention's gradient through the mask matches finite differences; the
// model saves and loads bit for bit; a mask of another length is refused naming both shapes.
BOOST_AUTO_TEST_CASE(a_key_padding_mask_is_an_input_of_its_own) {
  manual_seed(14);
  Model model = zoo::masked_transformer();
  const std::vector<Tensor> x = zoo::masked_tokens();
  auto& block = dynamic_cast<layers::TransformerBlock&>(model.layer("transformer_block"));
  const Tensor encoded = block.forward(model.layer("embedding").forward(x[0]), x[1]);
  const Tensor by_hand = model.layer("dense").forward(ops::flatten(encoded, 1));
  check_close(model.predict(x).front(), by_hand, 0.0, 0.0, "the graph against the layers by hand");
  const std::vector<float> unmasked = block.forward(model.layer("embedding").forward(x[0])).to_vector(), masked = encoded.to_vector();
  float largest = 0.0f;
  for (std::size_t i = 0; i < masked.size(); ++i) largest = std::max(largest, std::abs(masked[i] - unmasked[i]));
  BOOST_TEST(largest > 1e-3f);  // the mask changes what the padded samples' keys give

  layers::MultiHeadAttention attention{2, 4};
  Generator g{3};
  attention.ensure_built_inputs({{3, 4}, {3}}, g);
  const Tensor mask = Tensor::from(std::vector<std::int32_t>{0, 0, 1, 0, 1, 1}, {2, 3});
  const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return attention.forward_inputs({in[0], mask}); },
                                      {random_tensor({2, 3, 4}, 5)});
  BOOST_CHECK_MESSAGE(r.ok, "attention with a key-padding mask: gradients differ from finite differences\n" << r.report);

  test::TempDir dir{"masked_transformer"};
  model.save(dir.file("masked.safetensors"));
  check_close(load_model(dir.file("masked.safetensors")).predict(x).front(), model.predict(x).front(), 0.0, 0.0, "loaded");

  layers::Input seq{{5, 8}}, short_mask{{4}, {.dtype = DType::i32}};
  BOOST_CHECK_EXCEPTION(layers::MultiHeadAttention(2, 8)({seq, short_mask}), ShapeError,
                        message_has({"key-padding mask has samples of shape (4,), not (T,) for sequences of shape (5, 8)"}));
}

// save then load_model then predict gives the same bits; the file names each node's layer and
// inputs, so that parameters keep their names ("encoder.0.weight").
BOOST_AUTO_TEST_CASE(a_graph_model_saves_and_loads_bit_for_bit) {
  test::TempDir dir{"functional_save"};
  const std::string path = (dir.path / "graph.safetensors").string();
  Model model = every_kind_of_graph();
  model.compile(optim::Adam{.lr = 1e-3}, losses::CrossEntropy{});
  model.save(path);
  Model loaded = load_model(path);
  BOOST_TEST(loaded.compiled());
  BOOST_TEST(loaded.input_name(1) == "right");
  BOOST_TEST(loaded.output_name(1) == "score");
  std::vector<std::string> names, loaded_names;
  for (const auto& [name, t] : model.named_state()) names.push_back(name);
  for (const auto& [name, t] : loaded.named_state()) loaded_names.push_back(name);
  BOOST_TEST(names == loaded_names, boost::test_tools::per_element());
  BOOST_TEST(names[0] == "encoder.0.weight");
  const std::vector<Tensor> inputs{random_tensor({9, 5}, 1), random_tensor({9, 5}, 2)};
  const std::vector<Tensor> expected = model.predict(inputs, 4), got = loaded.predict(inputs, 4);
  for (std::size_t o = 0; o < expected.size(); ++o) check_close(got[o], expected[o], 0.0, 0.0, model.output_name(o));
  // Saved twice, the files' descriptions are the same.
  const std::string again = (dir.path / "again.safetensors").string();
  loaded.save(again);
  BOOST_TEST(serialization::load_safetensors(again).metadata.at("accrue.model") ==
             serialization::load_safetensors(path).metadata.at("accrue.model"));
}

// A graph description that cannot be a graph is refused naming the node: a cycle (a node reading
// itself or a later node), an input no output uses, a layer that does not exist, more nodes than
// a model can have, shapes that do not fit.
BOOST_AUTO_TEST_CASE(hostile_graph_descriptions_are_refused_naming_the_node) {
  test::TempDir dir{"functional_hostile"};
  const std::string path = (dir.path / "graph.safetensors").string();
  every_kind_of_graph().save(path);
  const auto rewrite = [&](const std::function<void(nlohmann::json&)>& change) {
    return zoo::with_description(path, (dir.path / "damaged.safetensors").string(), change);
  };
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["nodes"][3]["inputs"][0] = 2 + 3; })), ValueError,
                        message_has({"node 3", "a value it reads", "is 5", "0 to 4"}));
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["nodes"][0]["layer"] = 99; })), ValueError,
                        message_has({"node 0", "its layer is 99"}));
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) {
                          j["inputs"].push_back({{"name", "dangling"}, {"shape", {5}}, {"dtype", "float32"}});
                          for (auto& node : j["nodes"])
                            for (auto& v : node["inputs"])
                              if (v.template get<int>() >= 2) v = v.template get<int>() + 1;
                          for (auto& v : j["outputs"]) v = v.template get<int>() + 1;
                        })),
                        ValueError, message_has({"input 'dangling' (5,) is not used"}));
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["inputs"][1]["shape"] = {4}; })), ValueError,
                        message_has({"node 2 (layer 0 'dense')", "built for input samples of shape (5,) and now gets (4,)"}));
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) {
                          nlohmann::json many = nlohmann::json::array();
                          for (int k = 0; k < 1000000; ++k) many.push_back({{"layer", 0}, {"inputs", {0}}});
                          j["nodes"] = std::move(many);
                        })),
                        ValueError, message_has({"1000000 nodes", "at most 100000"}));
  BOOST_CHECK_EXCEPTION(load_model(rewrite([](auto& j) { j["outputs"] = {1000}; })), ValueError, message_has({"an output is 1000"}));
}

// Recomputation picks chains inside the graph (a node reading only the one before, whose output
// nothing else reads): never across a skip connection's fork or merge, nor from a value another
// node reads too. Training recomputed gives the same bits as without.
BOOST_AUTO_TEST_CASE(recomputed_segments_are_chains_inside_the_graph) {
  const auto make = [] {
    manual_seed(13);
    layers::Input in{{6}};
    Symbol x = layers::Tanh{}(layers::Dense{8}(in));
    for (int block = 0; block < 2; ++block)
      x = layers::Add{}({layers::Dense{8}(layers::Tanh{}(layers::Dense{8}(x))), x});
    Model model{in, layers::Dense{4}(x)};
    model.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}, losses::CrossEntropy{});
    return model;
  };
  Model plain = make(), recomputed = make();
  recomputed.recompute(RecomputePolicy::every(2));
  // Nodes: dense, tanh | dense, tanh, dense, add | dense, tanh, dense, add | dense (the output); the
  // first dense of each block reads the fork.
  std::string segments;
  for (const auto& [begin, end] : recomputed.recomputed_segments()) segments += fmt::format("[{}, {}) ", begin, end);
  BOOST_TEST(segments == "[0, 2) [3, 5) [7, 9) ");
  const Dataset data = blobs(64, 4);
  plain.fit(data, {.epochs = 2, .batch_size = 16, .shuffle = false, .verbose = 0});
  recomputed.fit(data, {.epochs = 2, .batch_size = 16, .shuffle = false, .verbose = 0});
  for (std::size_t i = 0; i < plain.parameters().size(); ++i)
    check_close(recomputed.parameters()[i], plain.parameters()[i], 0.0, 0.0, plain.named_parameters()[i].first);
  BOOST_TEST(recomputed.summary_str().find("dense_2 (Dense) *") != std::string::npos, recomputed.summary_str());
}
