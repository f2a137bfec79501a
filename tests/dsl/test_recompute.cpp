// Recomputation (layers::Recompute): a recomputed segment keeps only its input and runs its forward
// again inside backward, with its dropout masks replayed, under the first pass's autocast; training
// gives bit-identical parameters to the plain layers (SGD and AdamW, dropout, accumulation 4,
// bfloat16 autocast, BatchNorm's statistics updated once), and the memory it keeps shrinks. The
// processes' case is in tests/distributed/test_data_parallel.cpp.

#include <cstdio>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

// The same network twice, from the same seed: plain, and with its two hidden blocks recomputed.
Sequential plain_net() {
  manual_seed(21);
  return Sequential{layers::Input{6},  layers::Dense{32}, layers::BatchNorm1d{}, layers::ReLU{}, layers::Dropout{0.2f},
                    layers::Dense{32}, layers::Tanh{},    layers::Dropout{0.1f}, layers::Dense{4}};
}

Sequential recomputed_net() {
  manual_seed(21);
  return Sequential{layers::Input{6},
                    layers::Recompute{layers::Dense{32}, layers::BatchNorm1d{}, layers::ReLU{}, layers::Dropout{0.2f}},
                    layers::Recompute{layers::Dense{32}, layers::Tanh{}, layers::Dropout{0.1f}}, layers::Dense{4}};
}

std::vector<std::vector<float>> state_values(const Sequential& m) {
  std::vector<std::vector<float>> out;
  for (const auto& [name, t] : m.named_state()) out.push_back(t.to_vector<float>());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_recomputed_segment_keeps_the_layer_contract) {
  const LayerCheckResult r = check_layer(layers::Recompute{layers::Dense{5}, layers::Tanh{}, layers::Dense{3}}, {4});
  BOOST_CHECK_MESSAGE(r.ok, r.report);
}

BOOST_AUTO_TEST_CASE(recomputed_training_is_bit_identical_to_plain) {
  struct Case {
    std::string name;
    optim::Recipe recipe;
    int accumulate;
  };
  const std::vector<Case> cases{
      {"SGD with momentum", optim::SGD{.lr = 0.1, .momentum = 0.9}, 1},
      {"AdamW, accumulation 4", optim::AdamW{.lr = 1e-2}, 4},
      {"AdamW, accumulation 4, bfloat16 autocast", optim::Recipe{optim::AdamW{.lr = 1e-2}}.amp(DType::bf16), 4},
  };
  for (const Case& c : cases) {
    Sequential plain = plain_net(), recomputed = recomputed_net();
    BOOST_REQUIRE((state_values(plain) == state_values(recomputed)));
    for (Sequential* m : {&plain, &recomputed}) {
      m->compile(c.recipe, losses::CrossEntropy{});
      m->fit(blobs(96, 3), {.epochs = 2, .batch_size = 8, .accumulate = c.accumulate, .seed = 5, .verbose = 0});
    }
    // Every parameter and BatchNorm's running statistics, bit for bit.
    BOOST_TEST((state_values(plain) == state_values(recomputed)), c.name);
    // And training moved them (dropout on, so the masks were replayed, not redrawn).
    BOOST_TEST((state_values(plain) != state_values(plain_net())), c.name);
  }
}

BOOST_AUTO_TEST_CASE(a_segment_keeps_only_its_input) {
  // Activations that training keeps: a deep stack of wide layers, plain against recomputed in
  // segments of three; the memory plan says it, and the measured peak follows.
  const auto wide = [](bool recompute) {
    manual_seed(3);
    Sequential m{layers::Input{64}};
    for (int i = 0; i < 4; ++i) {
      if (recompute) m.add(layers::Recompute{layers::Dense{512}, layers::ReLU{}, layers::Dense{64}});
      else {
        m.add(layers::Dense{512});
        m.add(layers::ReLU{});
        m.add(layers::Dense{64});
      }
    }
    m.add(layers::Dense{4});
    m.compile(optim::SGD{.lr = 0.01}, losses::CrossEntropy{});
    return m;
  };
  Sequential plain = wide(false), recomputed = wide(true);
  const std::size_t plain_activations = plain.memory_plan(256).peak_of(MemoryCategory::activations);
  const std::size_t recomputed_activations = recomputed.memory_plan(256).peak_of(MemoryCategory::activations);
  BOOST_TEST_MESSAGE("planned activations: plain " << plain_activations << ", recomputed " << recomputed_activations);
  BOOST_TEST(recomputed_activations * 3 < plain_activations);
  std::vector<float> x(256 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) * 0.05f;
  const Dataset data{Tensor::from(x, {256, 64}), Tensor::zeros({256}, {.dtype = DType::i32}), "ramp"};
  std::vector<std::size_t> measured;
  for (Sequential* m : {&plain, &recomputed}) {
    const History h = m->fit(data, {.epochs = 1, .batch_size = 256, .shuffle = false, .verbose = 0});
    measured.push_back(h.memory().back().peak_total);
  }
  BOOST_TEST_MESSAGE("measured peaks: plain " << measured[0] << ", recomputed " << measured[1] << "; planned "
                                               << plain.memory_plan(256).peak_total << ", " << recomputed.memory_plan(256).peak_total);
  BOOST_TEST(measured[1] < measured[0]);
}

BOOST_AUTO_TEST_CASE(a_policy_recomputes_the_model_s_own_layers_bit_for_bit) {
  // Sequential::recompute: the same layers, names and bits, segments picked as Keras's RematScope.
  Sequential plain = plain_net(), policy = plain_net();
  const auto names = policy.named_parameters();
  for (Sequential* m : {&plain, &policy}) {
    m->compile(optim::Recipe{optim::AdamW{.lr = 1e-2}}.accumulate(4), losses::CrossEntropy{});
    FitOptions o{.epochs = 2, .batch_size = 8, .seed = 5, .verbose = 0};
    if (m == &policy) o.recompute = RecomputePolicy::every(3);
    m->fit(blobs(96, 3), o);
  }
  BOOST_TEST((state_values(plain) == state_values(policy)));
  BOOST_TEST(policy.named_parameters().front().first == names.front().first);
  // 8 layers, the last left out: segments of 3, 3 and 1.
  BOOST_TEST(policy.recomputed_segments().size() == 3u);
  BOOST_TEST(policy.recomputed_segments().back().second == 7u);
  Sequential m = plain_net();
  m.recompute(RecomputePolicy::every());  // sqrt(7) ~ 3 layers a segment
  BOOST_TEST(m.recomputed_segments().front().second == 3u);
  m.recompute(RecomputePolicy::of_types({"Dense"}));
  BOOST_TEST(m.recomputed_segments().size() == 3u);
  m.recompute(RecomputePolicy::larger_than(100));  // Dropout keeps a mask of 32 bytes, ReLU its 128-byte output
  BOOST_TEST(m.recomputed_segments().size() >= 2u);
  const std::string summary = m.summary_str(8);
  BOOST_TEST_MESSAGE(summary);
  BOOST_TEST(summary.find("(ReLU) *") != std::string::npos);
  BOOST_TEST(summary.find("recomputed in backward (layers keeping over 100 B per sample)") != std::string::npos);
  m.recompute({});
  BOOST_TEST(m.recomputed_segments().empty());
  BOOST_CHECK_EXCEPTION(m.recompute(RecomputePolicy::of_types({"TransformerBlock"})), ValueError,
                        message_has({"TransformerBlock layers", "picks none"}));
}

BOOST_AUTO_TEST_CASE(explain_names_the_recomputed_segments) {
  std::FILE* out = std::tmpfile();
  Sequential m = plain_net();
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  m.fit(blobs(16, 3), {.epochs = 1, .batch_size = 8, .callbacks = {callbacks::Explain{{.windows = 1, .stream = out}}},
                       .recompute = RecomputePolicy::every(4), .verbose = 0});
  const std::string text = test::read_file(out);
  std::fclose(out);
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find("recomputed (every 4 layers): dense to dropout, dense_1 to dropout_1;") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(evaluation_and_saving_see_plain_layers) {
  Sequential m = recomputed_net();
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  m.fit(blobs(32, 3), {.epochs = 1, .batch_size = 8, .verbose = 0});
  test::TempDir dir{"recompute"};
  const std::string path = dir.file("m.safetensors");
  m.save(path);
  Model loaded = load_model(path);
  BOOST_TEST(loaded.layer(0).type_name() == "Recompute");
  const Tensor x = blobs(16, 4).inputs();
  BOOST_TEST((loaded.predict(x).to_vector<float>() == m.predict(x).to_vector<float>()));
  BOOST_TEST(m.named_parameters()[0].first == "0.0.weight");
  BOOST_CHECK_EXCEPTION(layers::Recompute{std::vector<std::unique_ptr<Layer>>{}}.forward(x), Error,
                        message_has({"recomputation needs at least one layer"}));
}
