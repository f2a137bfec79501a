// Model::memory_plan against what training really allocates: every category and the peak
// total within 10% for the tutorial MLP and the CNN of examples/05_fashion_mnist_cnn.cpp, in float32
// and with .amp(), with and without accumulation (and with weight gradients multiplied per window),
// and with their blocks recomputed (layers::Recompute); and a graph with three skip connections.

#include "../test_util.hpp"

#include <accrue/kernels/conv.hpp>

using namespace accrue;

namespace {


Sequential tutorial_cnn(bool norm) {
  Sequential m{layers::Input{1, 28, 28}, layers::Conv2d{32, 3, {.padding = 1}}};
  if (norm) m.add(layers::BatchNorm2d{});
  m.add(layers::ReLU{});
  m.add(layers::MaxPool2d{2});
  m.add(layers::Conv2d{64, 3, {.padding = 1}});
  if (norm) m.add(layers::GroupNorm{8});
  m.add(layers::ReLU{});
  m.add(layers::MaxPool2d{2});
  m.add(layers::Flatten{});
  m.add(layers::Dense{128});
  m.add(layers::ReLU{});
  m.add(layers::Dense{10});
  return m;
}


// The same networks with each hidden block recomputed: the MLP's Dense-ReLU pairs, the CNN's
// convolution blocks.
Sequential recomputed_mlp() {
  return Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Recompute{layers::Dense{512}, layers::ReLU{}},
                    layers::Recompute{layers::Dense{512}, layers::ReLU{}}, layers::Dense{10}};
}

Sequential recomputed_cnn() {
  return Sequential{layers::Input{1, 28, 28},
                    layers::Recompute{layers::Conv2d{32, 3, {.padding = 1}}, layers::ReLU{}, layers::MaxPool2d{2}},
                    layers::Recompute{layers::Conv2d{64, 3, {.padding = 1}}, layers::ReLU{}, layers::MaxPool2d{2}},
                    layers::Flatten{},
                    layers::Dense{128},
                    layers::ReLU{},
                    layers::Dense{10}};
}

// The peaks of a second epoch (the first creates the optimizer state), the dataset taken out.
MemoryStats measure(Model& model, const Dataset& data, std::int64_t batch) {
  model.fit(data, {.epochs = 1, .batch_size = batch, .verbose = 0});
  reset_peak_memory();
  const std::size_t dataset = memory_stats().live_of(MemoryCategory::data);
  model.fit(data, {.epochs = 1, .batch_size = batch, .verbose = 0});
  MemoryStats s = memory_stats();
  s.peak[static_cast<int>(MemoryCategory::data)] -= dataset;
  s.peak_total -= dataset;
  return s;
}

void expect_within(double predicted, double measured, const std::string& what) {
  const double error = measured == 0 ? predicted : std::abs(predicted - measured) / measured;
  BOOST_CHECK_MESSAGE(error <= 0.10 || std::abs(predicted - measured) <= 1024,
                      what << ": predicted " << format_bytes(static_cast<std::size_t>(predicted)) << ", measured "
                           << format_bytes(static_cast<std::size_t>(measured)) << " (" << 100 * error << "% off)");
}

// Every category's peak and the total within 10% (or 1 KiB).
void expect_plan_within(const MemoryPlan& plan, const MemoryStats& measured, const std::string& name) {
  for (int i = 0; i < memory_category_count; ++i) {
    const auto cat = static_cast<MemoryCategory>(i);
    expect_within(static_cast<double>(plan.peak_of(cat)), static_cast<double>(measured.peak_of(cat)),
                  name + " " + std::string(category_name(cat)));
  }
  expect_within(static_cast<double>(plan.peak_total), static_cast<double>(measured.peak_total), name + " total");
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_plan_predicts_the_measured_peaks) {
  struct Case {
    std::string name;
    bool cnn, norm, amp;
    std::int64_t batch;
    int accumulate;
    WeightGradients weight_gradients = WeightGradients::per_micro_batch;
    bool recompute = false;
    bool policy = false;  // Sequential::recompute(every 2 layers) on the plain network
  };
  const std::vector<Case> cases = {
      {"MLP 64", false, false, false, 64, 1},       {"MLP 16x4", false, false, false, 16, 4},
      {"MLP 64 amp", false, false, true, 64, 1},    {"MLP 16x4 amp", false, false, true, 16, 4},
      {"CNN 16x4", true, false, false, 16, 4},      {"CNN 64", true, false, false, 64, 1},
      {"CNN 16x4 amp", true, false, true, 16, 4},   {"CNN 32 amp", true, false, true, 32, 1},
      {"CNN with BatchNorm and GroupNorm 16x2", true, true, false, 16, 2},
      {"CNN with BatchNorm and GroupNorm 16x2 amp", true, true, true, 16, 2},
      // Rows of Dense inputs and output gradients wait through the window, counted as gradients.
      {"MLP 8x8 weight gradients per window", false, false, false, 8, 8, WeightGradients::per_window},
      {"CNN 16x4 weight gradients per window", true, false, false, 16, 4, WeightGradients::per_window},
      {"MLP 64 recomputed", false, false, false, 64, 1, WeightGradients::per_micro_batch, true},
      {"MLP 16x4 amp recomputed", false, false, true, 16, 4, WeightGradients::per_micro_batch, true},
      {"CNN 64 recomputed", true, false, false, 64, 1, WeightGradients::per_micro_batch, true},
      {"CNN 16x4 recomputed", true, false, false, 16, 4, WeightGradients::per_micro_batch, true},
      {"MLP 64, every 2 layers recomputed", false, false, false, 64, 1, WeightGradients::per_micro_batch, false, true},
      {"CNN 32 amp, every 2 layers recomputed", true, false, true, 32, 1, WeightGradients::per_micro_batch, false, true},
  };
  for (const Case& c : cases) {
    manual_seed(0);
    Sequential model = c.recompute ? (c.cnn ? recomputed_cnn() : recomputed_mlp())
                       : c.cnn     ? tutorial_cnn(c.norm)
                                   : test::tutorial_mlp();
    optim::Recipe recipe = c.cnn ? optim::Recipe{optim::Adam{.lr = 1e-3}} : optim::Recipe{optim::SGD{.lr = 1e-3, .momentum = 0.9}};
    if (c.accumulate > 1) recipe = recipe.accumulate(c.accumulate, {.weight_gradients = c.weight_gradients});
    if (c.amp) recipe = recipe.amp();
    model.compile(recipe, losses::CrossEntropy{});
    if (c.policy) model.recompute(RecomputePolicy::every(2));
    const MemoryPlan plan = model.memory_plan(c.batch);  // before anything ran
    const MemoryStats measured = measure(model, test::random_images(c.batch * c.accumulate * 2), c.batch);
    BOOST_TEST_MESSAGE(c.name << ":\n" << plan.str() << "\nmeasured:\n" << measured.str());
    expect_plan_within(plan, measured, c.name);
  }
}

// A functional model with three skip connections (each block's input added to its output): each
// block's input stays alive until its Add, and its gradient gathers both paths.
BOOST_AUTO_TEST_CASE(the_plan_of_a_graph_predicts_its_measured_peaks) {
  for (const auto& [name, batch, accumulate, amp] : std::vector<std::tuple<std::string, std::int64_t, int, bool>>{
           {"skips 32", 32, 1, false}, {"skips 16x2", 16, 2, false}, {"skips 32 amp", 32, 1, true}}) {
    manual_seed(0);
    layers::Input image{{1, 28, 28}};
    Symbol x = layers::ReLU{}(layers::Dense{256}(layers::Flatten{}(image)));
    for (int block = 0; block < 3; ++block) x = layers::Add{}({layers::ReLU{}(layers::Dense{256}(x)), x});
    Model model{image, layers::Dense{10}(x)};
    optim::Recipe recipe = optim::SGD{.lr = 1e-3, .momentum = 0.9};
    if (accumulate > 1) recipe = recipe.accumulate(accumulate);
    if (amp) recipe = recipe.amp();
    model.compile(recipe, losses::CrossEntropy{});
    const MemoryPlan plan = model.memory_plan(batch);
    const MemoryStats measured = measure(model, test::random_images(batch * accumulate * 2), batch);
    BOOST_TEST_MESSAGE(name << ":\n" << plan.str() << "\nmeasured:\n" << measured.str());
    expect_plan_within(plan, measured, name);
  }
}

BOOST_AUTO_TEST_CASE(the_plan_covers_sequence_models_attention_and_recurrence) {
  // A small GPT: tokens, positions, two causal Transformer blocks (attention's scores are scratch,
  // one head per thread on the CPU), a loss per token.
  // And recurrent networks, whose steps each keep their gates and states.
  // With weight gradients per window, the rows each step's hidden product (and the last Dense)
  // keep waiting.
  for (const auto& [name, batch, accumulate, amp] : std::vector<std::tuple<std::string, std::int64_t, int, bool>>{
           {"GPT 8x2", 8, 2, false}, {"GPT 16", 16, 1, false}, {"GPT 8x2 amp", 8, 2, true}, {"LSTM 16x2", 16, 2, false},
           {"GRU 32", 32, 1, false}, {"LSTM 4x2 per window", 4, 2, false}, {"GRU 2x4 per window", 2, 4, false}}) {
    manual_seed(0);
    Sequential model = name.starts_with("LSTM")  ? Sequential{layers::Input{64}, layers::Embedding{50, 16},
                                                              layers::LSTM{32, {.layers = 2}}, layers::Dense{50}}
                       : name.starts_with("GRU") ? Sequential{layers::Input{64}, layers::Embedding{50, 16},
                                                              layers::GRU{24}, layers::Dense{50}}
                                                 : Sequential{layers::Input{64}, layers::Embedding{50, 64}, layers::PositionalEmbedding{64},
                                         layers::TransformerBlock{4, 64, {.causal = true}},
                                         layers::TransformerBlock{4, 64, {.causal = true}}, layers::LayerNorm{},
                                         layers::Dense{50}};
    optim::Recipe recipe = optim::AdamW{.lr = 1e-3};
    const WeightGradients weight_gradients =
        name.ends_with("per window") ? WeightGradients::per_window : WeightGradients::per_micro_batch;
    if (accumulate > 1) recipe = recipe.accumulate(accumulate, {.weight_gradients = weight_gradients});
    if (amp) recipe = recipe.amp();
    model.compile(recipe, losses::CrossEntropy{});
    const MemoryPlan plan = model.memory_plan(batch);
    Generator gen{3};
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(batch * accumulate * 2 * 64));
    for (auto& t : tokens) t = static_cast<std::int32_t>(gen.below(50));
    const Tensor x = Tensor::from(tokens, {batch * accumulate * 2, 64});
    const MemoryStats measured = measure(model, Dataset{x, x, "tokens"}, batch);
    BOOST_TEST_MESSAGE(name << ":\n" << plan.str() << "\nmeasured:\n" << measured.str());
    expect_plan_within(plan, measured, name);
  }
}

BOOST_AUTO_TEST_CASE(activations_scale_with_the_micro_batch_not_the_effective_batch) {
  manual_seed(0);
  Sequential model = test::tutorial_mlp();
  model.compile(optim::SGD{.lr = 1e-3}.accumulate(4), losses::CrossEntropy{});
  const MemoryPlan p16 = model.memory_plan(16), p64 = model.memory_plan(64);
  BOOST_TEST(p64.peak_of(MemoryCategory::activations) == 4 * p16.peak_of(MemoryCategory::activations));
  BOOST_TEST(p64.peak_of(MemoryCategory::parameters) == p16.peak_of(MemoryCategory::parameters));
  BOOST_TEST(p64.peak_of(MemoryCategory::gradients) == p16.peak_of(MemoryCategory::gradients));
  // What each layer keeps: ReLU its output (16 x 512 floats), Dense its input (kept already), the
  // loss its logits.
  BOOST_TEST(p16.kept_by_layer[2] == 16u * 512 * 4);
  BOOST_TEST(p16.kept_by_layer[1] == 0u);
  BOOST_CHECK_EXCEPTION(model.memory_plan(0), ValueError, test::message_has({"micro-batch must be positive"}));
  Sequential unbuilt{layers::Dense{3}};
  BOOST_CHECK_EXCEPTION(unbuilt.memory_plan(8), ValueError, test::message_has({"not built"}));
}

BOOST_AUTO_TEST_CASE(each_epoch_reports_its_peak) {
  manual_seed(0);
  Sequential model = test::tutorial_mlp();
  model.compile(optim::SGD{.lr = 1e-3}.accumulate(2), losses::CrossEntropy{});
  std::FILE* out = std::tmpfile();
  const History h = model.fit(test::random_images(128), {.epochs = 2,
                                            .batch_size = 32,
                                            .callbacks = {callbacks::ProgressBar{{.mode = callbacks::ProgressBarOptions::Mode::lines, .stream = out}}},
                                            .verbose = 0});
  BOOST_REQUIRE(h.memory().size() == 2u);
  const MemoryPlan plan = model.memory_plan(32);
  for (const MemoryStats& m : h.memory()) {
    BOOST_TEST(m.peak_of(MemoryCategory::activations) == plan.peak_of(MemoryCategory::activations));
    BOOST_TEST(m.peak_of(MemoryCategory::gradients) == plan.peak_of(MemoryCategory::gradients));
  }
  std::rewind(out);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), out));
  std::fclose(out);
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find("peak_mem: " + format_bytes(h.memory()[0].peak_total)) != std::string::npos);
}

BOOST_AUTO_TEST_CASE(summary_with_a_batch_shows_what_each_layer_keeps) {
  manual_seed(0);
  Sequential model = test::tutorial_mlp();
  model.compile(optim::SGD{.lr = 1e-3}, losses::CrossEntropy{});
  const std::string s = model.summary_str(64);
  BOOST_TEST_MESSAGE(s);
  BOOST_TEST(s.find("Kept @64") != std::string::npos);
  BOOST_TEST(s.find("128.00 KiB") != std::string::npos);  // each ReLU's output: 64 x 512 floats
  BOOST_TEST(s.find("Memory plan: micro-batch 64 on cpu, float32") != std::string::npos);
  BOOST_TEST(model.summary_str().find("Kept") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_category_moves_when_it_should) {
  manual_seed(0);
  const std::size_t start = memory_stats().live_total;
  Sequential model = test::tutorial_mlp();  // built at once (layers::Input): parameters exist now
  const MemoryStats built = memory_stats();
  BOOST_TEST(built.live_of(MemoryCategory::parameters) == 669706u * 4);
  model.compile(optim::SGD{.lr = 1e-3, .momentum = 0.9}, losses::CrossEntropy{});
  BOOST_TEST(memory_stats().live_of(MemoryCategory::optimizer_state) == 0u);  // created at the first step
  const Dataset data = test::random_images(64);
  const std::size_t with_data = memory_stats().live_of(MemoryCategory::data);
  BOOST_TEST(with_data == 64u * 784 * 4 + 64u * 4);
  const History h = model.fit(data, {.batch_size = 32, .verbose = 0});
  const MemoryStats epoch = h.memory().front(), after = memory_stats();
  // During training: every category was used.
  for (MemoryCategory c : {MemoryCategory::gradients, MemoryCategory::activations, MemoryCategory::temporaries})
    BOOST_TEST(epoch.peak_of(c) > 0u, category_name(c));
  BOOST_TEST(epoch.peak_of(MemoryCategory::data) > with_data);  // shuffled batches are gathered copies
  // After: momentum buffers stay, everything of the steps is gone.
  BOOST_TEST(after.live_of(MemoryCategory::optimizer_state) == 669706u * 4);
  for (MemoryCategory c : {MemoryCategory::gradients, MemoryCategory::activations, MemoryCategory::temporaries})
    BOOST_TEST(after.live_of(c) == 0u, category_name(c));
  BOOST_TEST(after.live_of(MemoryCategory::data) == with_data);
  (void)start;
}

BOOST_AUTO_TEST_CASE(the_precision_effect_says_why_the_peak_moved) {
  // bfloat16 raises the tutorial MLP's peak at 64 (its copies of the weights outweigh the small
  // activations it halves) and lowers the CNN's (whose activations dominate) where convolutions
  // run in bfloat16 (AMX, AVX-512 BF16); elsewhere they stay float32 and the CNN's peak stays.
  struct Case {
    bool cnn;
    std::string word;
  };
  const std::string cnn_word = kernels::conv2d_runs_bf16(Device::cpu()) ? "lowers" : "leaves";
  for (const Case& c : {Case{false, "raises"}, Case{true, cnn_word}}) {
    Sequential model = c.cnn ? tutorial_cnn(false)
                             : Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                                          layers::Dense{512}, layers::ReLU{}, layers::Dense{10}};
    model.compile(optim::Recipe{optim::SGD{.lr = 0.1}}.amp(dtype::bf16), losses::CrossEntropy{});
    const PrecisionEffect effect = model.precision_effect(64, false);
    const std::string sentence = effect.str();
    BOOST_TEST_MESSAGE(sentence);
    BOOST_TEST(effect.float32.precision == "float32");
    BOOST_TEST(effect.mixed.precision == "bfloat16 autocast");
    BOOST_TEST((effect.mixed.peak_total > effect.float32.peak_total) == (c.word == "raises"));
    if (c.word == "leaves") {
      BOOST_TEST(effect.mixed.peak_total == effect.float32.peak_total);
      BOOST_TEST(sentence.starts_with("bfloat16 autocast leaves the planned peak at " + format_bytes(effect.float32.peak_total)));
    } else {
      BOOST_TEST(sentence.starts_with("bfloat16 autocast " + c.word + " the planned peak from " +
                                      format_bytes(effect.float32.peak_total) + " to " + format_bytes(effect.mixed.peak_total)));
      BOOST_TEST(sentence.find("activations kept for backward in bfloat16 (-") != std::string::npos);
    }
    // The plan as compiled is memory_plan's.
    BOOST_TEST(effect.mixed.peak_total == model.memory_plan(64, false).peak_total);
  }
  Sequential plain{layers::Input{4}, layers::Dense{2}};
  plain.compile(optim::SGD{.lr = 0.1}, losses::MSE{});
  BOOST_TEST(plain.precision_effect(8, false).str().empty());
}
