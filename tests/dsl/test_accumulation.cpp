// Gradient accumulation done exactly: N micro-batches of B give the parameters of one batch of
// N x B, with short and uneven windows too; per_micro_batch differs exactly where it should;
// clipping acts once on the accumulated gradient; a skipped step does not advance the schedule;
// the planned step count equals the steps training really applies; weight gradients multiplied
// once per window change no bit.

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

Sequential model(std::uint64_t seed) { return blobs_mlp(seed); }

std::vector<std::vector<float>> params_of(const Sequential& m) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.to_vector());
  return out;
}

void expect_same_params(const Sequential& a, const Sequential& b, const std::string& what, double tol = 2e-6) {
  const auto pa = params_of(a), pb = params_of(b);
  for (std::size_t i = 0; i < pa.size(); ++i) check_close(pa[i], pb[i], tol, 1e-5, what + " parameter " + std::to_string(i));
}

// Trains `m` with micro-batch b accumulated k (k = 1: one batch of b) and returns it.
Sequential& train(Sequential& m, const optim::Recipe& recipe, const Dataset& data, std::int64_t b, int epochs,
                  AccumulateOptions options = {}) {
  m.compile(recipe, losses::CrossEntropy{});
  m.fit(data, {.epochs = epochs, .batch_size = b, .accumulate_options = options, .shuffle = false, .verbose = 0});
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(micro_batches_equal_one_large_batch) {
  // 96 samples: windows of 4 x 8 = 32, the same as batches of 32, for two epochs (6 steps).
  const Dataset data = blobs(96, 1);
  const std::vector<optim::Recipe> optimizers = {
      optim::SGD{.lr = 0.1, .momentum = 0.9},
      optim::AdamW{.lr = 1e-2, .weight_decay = 0.05},
      optim::RMSprop{.lr = 1e-2, .weight_decay = 1e-3, .momentum = 0.9, .centered = true},
      optim::Adagrad{.lr = 0.1, .lr_decay = 0.01},
      optim::LARS{.lr = 0.5, .weight_decay = 1e-4, .trust_coefficient = 0.02},
      optim::LAMB{.lr = 1e-2},
      optim::Lion{.lr = 1e-3, .weight_decay = 0.1}};
  for (const optim::Recipe& one_batch : optimizers) {
    Sequential large = model(7), accumulated = model(7);
    train(large, one_batch, data, 32, 2);
    train(accumulated, one_batch.accumulate(4), data, 8, 2);
    expect_same_params(large, accumulated, "4 x 8 against 32 with " + one_batch.str());
  }
}

BOOST_AUTO_TEST_CASE(short_last_window_and_uneven_micro_batches) {
  // 100 samples in micro-batches of 8: 12 of 8 and one of 4. Windows of 4: [8 8 8 8] x 3, then [4]:
  // the same samples as batches of 32 (three of 32 and one of 4).
  const Dataset short_last = blobs(100, 2);
  Sequential large = model(8), accumulated = model(8);
  train(large, optim::SGD{.lr = 0.1, .momentum = 0.9}, short_last, 32, 2);
  train(accumulated, optim::SGD{.lr = 0.1, .momentum = 0.9}.accumulate(4), short_last, 8, 2);
  expect_same_params(large, accumulated, "short last window");

  // 90 samples: the last window is [8 8 8 2], 26 samples of uneven micro-batches; batches of 32
  // give 32, 32, 26. The window's loss is weighted by its 26 samples, not by 4 micro-batches.
  const Dataset uneven = blobs(90, 3);
  Sequential large2 = model(9), accumulated2 = model(9);
  train(large2, optim::AdamW{.lr = 1e-2}, uneven, 32, 3);
  train(accumulated2, optim::AdamW{.lr = 1e-2}.accumulate(4), uneven, 8, 3);
  expect_same_params(large2, accumulated2, "uneven micro-batches");
}

BOOST_AUTO_TEST_CASE(weight_gradients_per_window_change_no_bit) {
  // Layers wide enough to defer (64 x 64 keeps 16 rows: two micro-batches of 8, so the third of a
  // window multiplies what waits first), over uneven windows and a short last one, with SGD
  // momentum and AdamW: the parameters are those of per-micro-batch gradients, bit for bit.
  const auto wide = [](std::uint64_t seed) {
    manual_seed(seed);
    return Sequential{layers::Input{6}, layers::Dense{64}, layers::Tanh{}, layers::Dense{64}, layers::Tanh{},
                      layers::Dense{4}};
  };
  const Dataset data = blobs(90, 6);
  const AccumulateOptions per_window{.weight_gradients = WeightGradients::per_window};
  for (const optim::Recipe& base : {optim::Recipe{optim::SGD{.lr = 0.1, .momentum = 0.9}},
                                    optim::Recipe{optim::AdamW{.lr = 1e-2, .weight_decay = 0.05}}}) {
    Sequential a = wide(13), b = wide(13);
    train(a, base.accumulate(4), data, 8, 2);
    train(b, base.accumulate(4, per_window), data, 8, 2);
    BOOST_TEST((params_of(a) == params_of(b)), "per window against per micro-batch with " << base.str());
  }
}

BOOST_AUTO_TEST_CASE(per_micro_batch_differs_exactly_where_it_should) {
  const Dataset data = blobs(64, 4);
  Sequential m = model(10);
  m.compile(optim::SGD{}, losses::CrossEntropy{});
  // Equal micro-batches: loss / N is the window mean, exactly.
  const AccumulationCheck even = verify_accumulation(m, data, {.sizes = {8, 8, 8, 8}, .normalization = Normalization::per_micro_batch});
  BOOST_TEST(even.max_relative_difference < 1e-5);
  BOOST_TEST(even.likely_causes.empty());
  // Uneven ones: per_window stays exact, per_micro_batch does not, and says why.
  const AccumulationCheck window = verify_accumulation(m, data, {.sizes = {8, 8, 8, 2}});
  BOOST_TEST(window.max_relative_difference < 1e-5);
  const AccumulationCheck tutorial = verify_accumulation(m, data, {.sizes = {8, 8, 8, 2}, .normalization = Normalization::per_micro_batch});
  BOOST_TEST(tutorial.max_relative_difference > 1e-2);
  BOOST_TEST(tutorial.str().find("per_micro_batch") != std::string::npos);
  BOOST_TEST_MESSAGE(tutorial.str());

  // In training: identical parameters for even windows, different once a window is uneven.
  const Dataset even_data = blobs(64, 5), uneven_data = blobs(60, 5);
  const AccumulateOptions tutorial_mode{.normalization = Normalization::per_micro_batch};
  Sequential a = model(11), b = model(11);
  train(a, optim::SGD{.lr = 0.1}.accumulate(4), even_data, 8, 1);
  train(b, optim::SGD{.lr = 0.1}.accumulate(4, tutorial_mode), even_data, 8, 1);
  expect_same_params(a, b, "even windows");
  Sequential c = model(12), d = model(12);
  train(c, optim::SGD{.lr = 0.1}.accumulate(4), uneven_data, 8, 1);
  train(d, optim::SGD{.lr = 0.1}.accumulate(4, tutorial_mode), uneven_data, 8, 1);
  double diff = 0;
  const auto pc = params_of(c), pd = params_of(d);
  for (std::size_t i = 0; i < pc.size(); ++i)
    for (std::size_t j = 0; j < pc[i].size(); ++j) diff = std::max(diff, double(std::abs(pc[i][j] - pd[i][j])));
  BOOST_TEST(diff > 1e-4);
}

BOOST_AUTO_TEST_CASE(verify_accumulation_names_dropout) {
  const Dataset data = blobs(64, 6);
  manual_seed(13);
  Sequential m{layers::Input{6}, layers::Dense{32}, layers::ReLU{}, layers::Dropout{0.5f}, layers::Dense{4}};
  m.compile(optim::SGD{}, losses::CrossEntropy{});
  const AccumulationCheck with_dropout = verify_accumulation(m, data, {.micro_batches = 4, .micro_batch = 8});
  BOOST_TEST(with_dropout.max_relative_difference > 1e-3);
  BOOST_TEST(with_dropout.str().find("dropout layer 'dropout'") != std::string::npos);
  const AccumulationCheck in_eval = verify_accumulation(m, data, {.micro_batches = 4, .micro_batch = 8, .training = false});
  BOOST_TEST(in_eval.max_relative_difference < 1e-5);
  for (const Tensor& p : m.parameters()) BOOST_TEST(!p.grad().defined());  // left as it was
}

BOOST_AUTO_TEST_CASE(logged_loss_is_the_mean_per_sample) {
  // With accumulation the epoch's loss is the mean over samples, never divided by N.
  const Dataset data = blobs(64, 14);
  Sequential a = model(15), b = model(15);
  a.compile(optim::SGD{.lr = 0.0}, losses::CrossEntropy{});
  b.compile(optim::SGD{.lr = 0.0}.accumulate(4), losses::CrossEntropy{});
  const double la = a.fit(data, {.batch_size = 32, .verbose = 0})["loss"][0];
  const double lb = b.fit(data, {.batch_size = 8, .verbose = 0})["loss"][0];
  BOOST_TEST(la == lb, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(la == a.evaluate(data).loss, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(clipping_acts_once_on_the_accumulated_gradient) {
  const Dataset data = blobs(32, 16);
  // The window's accumulated gradient, from the same initial weights.
  Sequential reference = model(17);
  reference.compile(optim::SGD{}, losses::CrossEntropy{});
  reference.build({6});
  const auto initial = params_of(reference);
  ops::cross_entropy(reference(data.inputs()), data.targets()).backward();
  double norm2 = 0;
  std::vector<std::vector<float>> grads;
  for (const Tensor& p : reference.parameters()) {
    grads.push_back(p.grad().to_vector());
    for (float g : grads.back()) norm2 += double(g) * g;
  }
  const double norm = std::sqrt(norm2), max_norm = 0.05, lr = 0.5;
  BOOST_REQUIRE(norm > max_norm);  // so clipping acts

  Sequential clipped = model(17);
  std::vector<StepRecord> steps;
  clipped.compile(optim::SGD{.lr = lr}.accumulate(4).clip(max_norm), losses::CrossEntropy{});
  clipped.fit(data, {.batch_size = 8, .callbacks = {callbacks::Lambda{{.optimizer_step = [&](const StepRecord& r) {
                                                      steps.push_back(r);
                                                    }}}},
                     .shuffle = false, .verbose = 0});
  BOOST_REQUIRE(steps.size() == 1u);
  BOOST_TEST(*steps[0].grad_norm_before == norm, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(*steps[0].grad_norm_after == max_norm, boost::test_tools::tolerance(1e-4));
  // One SGD step with the whole gradient scaled to max_norm.
  const double scale = max_norm / (norm + 1e-6);
  const auto after = params_of(clipped);
  for (std::size_t i = 0; i < after.size(); ++i) {
    std::vector<float> expected(after[i].size());
    for (std::size_t j = 0; j < expected.size(); ++j)
      expected[j] = static_cast<float>(initial[i][j] - lr * scale * grads[i][j]);
    check_close(after[i], expected, 1e-6, 1e-5, "clipped step");
  }
}

BOOST_AUTO_TEST_CASE(a_skipped_step_does_not_advance_the_schedule) {
  Dataset data = blobs(64, 18);
  std::vector<float> x = data.inputs().to_vector();
  x[20 * 6] = std::nanf("");  // sample 20: the second window (samples 16..31) of micro-batch 8 x 2
  data = Dataset{Tensor::from(x, {64, 6}), data.targets()};
  Sequential m = model(19);
  auto monitor = std::make_shared<callbacks::LearningRateMonitor>();
  auto guard = std::make_shared<callbacks::NanGuard>();
  std::vector<StepRecord::Status> statuses;
  m.compile(optim::SGD{.lr = 0.01}.accumulate(2), losses::CrossEntropy{});
  const History h = m.fit(data, {.batch_size = 8,
                                 .schedule = schedules::lambda([](std::int64_t t, std::int64_t) { return double(t + 1); }),
                                 .callbacks = {monitor, guard,
                                               callbacks::Lambda{{.optimizer_step = [&](const StepRecord& r) {
                                                 statuses.push_back(r.status);
                                               }}}},
                                 .shuffle = false, .verbose = 0});
  using S = StepRecord::Status;
  BOOST_TEST((statuses == std::vector<S>{S::applied, S::skipped, S::applied, S::applied}));
  BOOST_TEST(guard->seen() == 1);
  // The lambda gives step t the factor t + 1: applied steps 0, 1, 2 got 1, 2, 3 (no gap at the skip).
  std::vector<double> lrs;
  for (const auto& [step, lr] : monitor->history()) lrs.push_back(lr);
  check_close(std::vector<float>(lrs.begin(), lrs.end()), {0.01f, 0.02f, 0.03f}, 1e-9, 1e-6, "learning rates");
  for (const Tensor& p : m.parameters())
    for (float v : p.to_vector()) BOOST_REQUIRE(std::isfinite(v));  // the NaN never reached the weights
  BOOST_TEST(std::isfinite(h["loss"][0]));
}

BOOST_AUTO_TEST_CASE(planned_steps_equal_applied_steps) {
  // Brute force: train tiny runs and count the optimizer steps they really apply.
  int runs = 0;
  for (std::int64_t n : {1, 7, 32, 45}) {
    for (std::int64_t b : {1, 4, 8}) {
      const std::vector<AccumulationSchedule> schedules = {
          1, 3, {{0, 2}, {2, 5}}, AccumulationSchedule::by_step({{0, 1}, {4, 3}}), AccumulationSchedule::effective_batch(2 * b),
          [](int e) { return e + 1; }};
      for (const AccumulationSchedule& s : schedules) {
        for (LastWindow policy : {LastWindow::normalize, LastWindow::drop, LastWindow::carry}) {
          for (bool drop_last : {false, true}) {
            if (drop_last && n < b) continue;
            Sequential m{layers::Input{6}, layers::Dense{2}};
            m.compile(optim::SGD{.lr = 0.01}, losses::CrossEntropy{});
            const Dataset data = blobs(n, 20).subset(0, n);
            std::int64_t applied = 0, micro = 0;
            const TrainerOptions options{.epochs = 3, .batch_size = b, .accumulate = s,
                                         .accumulate_options = {.last_window = policy},
                                         .callbacks = {callbacks::Lambda{{
                                             .micro_batch_end = [&](const StepRecord&, const Logs&) { ++micro; },
                                             .optimizer_step = [&](const StepRecord& r) {
                                               applied += r.status == StepRecord::Status::applied;
                                             }}}},
                                         .shuffle = false, .drop_last = drop_last, .verbose = 0};
            // Labels 0..3 with a Dense{2} head are out of range; train on labels mod 2.
            std::vector<std::int32_t> y = data.targets().to_vector<std::int32_t>();
            for (auto& v : y) v %= 2;
            Trainer trainer{options};
            const std::int64_t planned = trainer.total_optimizer_steps(m, n);
            trainer.fit(m, Dataset{data.inputs(), Tensor::from(y, {n})});
            BOOST_CHECK_MESSAGE(applied == planned, "n=" << n << " b=" << b << " schedule=" << s.str() << " policy="
                                                         << last_window_name(policy) << " drop_last=" << drop_last
                                                         << ": planned " << planned << ", applied " << applied);
            const std::int64_t per_epoch = drop_last ? n / b : (n + b - 1) / b;
            if (policy != LastWindow::drop) BOOST_TEST(micro == 3 * per_epoch);  // every micro-batch ran
            ++runs;
          }
        }
      }
    }
  }
  BOOST_TEST_MESSAGE(runs << " runs");
}

BOOST_AUTO_TEST_CASE(bad_configuration_is_refused_before_training) {
  Sequential m = model(21);
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}.accumulate(0), losses::CrossEntropy{}), ValueError,
                        message_has({"compile", "accumulate(0)", "at least 1"}));
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}.clip(-1.0), losses::CrossEntropy{}), ValueError,
                        message_has({"clip(-1)", "positive"}));
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}.accumulate({{2, 4}, {1, 2}}), losses::CrossEntropy{}), ValueError,
                        message_has({"keys must increase", "1 comes after 2"}));
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}.accumulate({{-1, 4}}), losses::CrossEntropy{}), ValueError,
                        message_has({"key -1", "negative"}));
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}.clip(1.0).clip_value(0.5), losses::CrossEntropy{}), ValueError,
                        message_has({"clip() and clip_value()"}));
  BOOST_CHECK_EXCEPTION(Trainer({.batch_size = 12, .accumulate = AccumulationSchedule::effective_batch(64)}), ValueError,
                        message_has({"effective_batch(64)", "micro-batch of 12"}));
  BOOST_CHECK_EXCEPTION(Trainer({.accumulate = {{0, 4}, {0, 2}}}), ValueError, message_has({"increase"}));

  // Warmup longer than training: refused at the start of fit, before any weight changes.
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  const Dataset data = blobs(64, 22);
  const auto before = params_of(m);
  BOOST_CHECK_EXCEPTION(m.fit(data, {.epochs = 2, .batch_size = 16,
                                     .schedule = schedules::warmup_linear({.warmup = Duration::epochs(3)}), .verbose = 0}),
                        ValueError, message_has({"warmup of 12 optimizer steps", "longer than the 8"}));
  BOOST_TEST(params_of(m) == before);
  // Accumulation set in two places.
  m.compile(optim::SGD{}.accumulate(2), losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(m.fit(data, {.accumulate = 4, .verbose = 0}), ValueError, message_has({"set twice", "2", "4"}));
}

BOOST_AUTO_TEST_CASE(recipes_are_values) {
  const optim::Recipe r = optim::SGD{.lr = 0.001}.accumulate(4).clip(1.0);
  BOOST_TEST(r.str() == "SGD(lr=0.001) accumulate=4 clip=1");
  const optim::Recipe copy = r;
  BOOST_TEST((copy == r));
  BOOST_TEST(!(r == optim::SGD{.lr = 0.001}.accumulate(8).clip(1.0)));
  BOOST_TEST(!(r == optim::Adam{.lr = 0.001}.accumulate(4).clip(1.0)));
  BOOST_TEST(optim::Adam{}.accumulate({{0, 8}, {4, 2}}, {.last_window = LastWindow::carry}).str() ==
             "Adam(lr=0.001) accumulate={0: 8, 4: 2} last_window=carry");
  BOOST_TEST(optim::SGD{}.clip_value(0.5).str() == "SGD(lr=0.001) clip_value=0.5");
}

BOOST_AUTO_TEST_CASE(batch_statistics_layers_get_one_warning) {
  // A stand-in for BatchNorm: a layer that declares it uses batch statistics.
  struct BatchStats final : LayerBase<BatchStats> {
    std::string type_name() const override { return "BatchStats"; }
    bool uses_batch_statistics() const override { return true; }
    Tensor forward(const Tensor& x) override { return x; }
  };
  std::vector<std::string> warnings;
  log::set_sink([&](log::Level l, std::string_view m) {
    if (l == log::Level::warning) warnings.emplace_back(m);
  });
  manual_seed(23);
  Sequential m{layers::Input{6}, BatchStats{}, layers::Dense{4}};
  m.compile(optim::SGD{}.accumulate(4), losses::CrossEntropy{});
  m.fit(blobs(64, 24), {.epochs = 2, .batch_size = 8, .verbose = 0});
  m.compile(optim::SGD{}, losses::CrossEntropy{});
  m.fit(blobs(64, 24), {.batch_size = 8, .verbose = 0});  // no accumulation, no warning
  log::set_sink(nullptr);
  BOOST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(warnings[0].find("layer 'batch_stats' (BatchStats)") != std::string::npos);
  BOOST_TEST(warnings[0].find("micro-batch of 8") != std::string::npos);
  BOOST_TEST(warnings[0].find("GroupNorm or LayerNorm") != std::string::npos);
}

namespace {

// What Explain writes over the first `windows` windows of fitting `m` on 32 blobs in batches of 8.
std::string explained_fit(Sequential& m, int windows) {
  std::FILE* out = std::tmpfile();
  m.fit(blobs(32, 26), {.batch_size = 8, .callbacks = {callbacks::Explain{{.windows = windows, .stream = out}}}, .verbose = 0});
  std::string text = read_file(out);
  std::fclose(out);
  BOOST_TEST_MESSAGE(text);
  return text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(explain_mode_tells_what_happens) {
  Sequential m = model(25);
  m.compile(optim::SGD{.lr = 0.1}.accumulate(2).clip(0.5), losses::CrossEntropy{});
  const std::string text = explained_fit(m, 1);
  for (const char* part : {"window 1 (optimizer step 1): 2 micro-batches, 16 samples", "micro-batch 1/2: forward 8 samples",
                           "backward adds its gradient into .grad()", "weighted 0.0625 (1/16)", "micro-batch 2/2",
                           "step: gradient norm", "SGD(lr=0.1) steps with lr 0.1", ".grad() zeroed"})
    BOOST_CHECK_MESSAGE(text.find(part) != std::string::npos, "explain output lacks '" << part << "'");
  BOOST_TEST(text.find("window 2") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(explain_mode_shows_lamb_trust_ratios) {
  Sequential m = model(25);
  m.compile(optim::LAMB{.lr = 1e-2}.accumulate(2), losses::CrossEntropy{});
  const std::string text = explained_fit(m, 2);
  // Trust ratios of the weights (each ||w|| / ||r||; the last step's are the optimizer's now), not
  // of the biases, which LAMB leaves out.
  const auto& lamb = dynamic_cast<const optim::LayerwiseOptimizer&>(m.optimizer());
  for (const std::string part : {fmt::format("trust ratios 0.weight {:.4g}", lamb.trust_ratios()[0]), std::string{"0.bias excluded"},
                                 fmt::format("2.weight {:.4g}", lamb.trust_ratios()[2]), std::string{"2.bias excluded"}})
    BOOST_CHECK_MESSAGE(text.find(part) != std::string::npos, "explain output lacks '" << part << "'");
  BOOST_TEST(lamb.trust_ratios()[0] != 1.0);
}

namespace {

// 8 sequences of 6 tokens over a vocabulary of 7, the targets padded with ignore_index (-100)
// after `lengths[i]` real tokens: the first micro-batches of 2 hold long sequences, the last ones
// short.
Dataset padded_sequences(const std::vector<int>& lengths) {
  Generator gen{31};
  const std::int64_t N = static_cast<std::int64_t>(lengths.size()), T = 6;
  std::vector<std::int32_t> x(static_cast<std::size_t>(N * T)), y(x.size());
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t t = 0; t < T; ++t) {
      const auto at = static_cast<std::size_t>(i * T + t);
      x[at] = static_cast<std::int32_t>(gen.below(7));
      y[at] = t < lengths[static_cast<std::size_t>(i)] ? static_cast<std::int32_t>(gen.below(7)) : -100;
    }
  return Dataset{Tensor::from(x, {N, T}), Tensor::from(y, {N, T}), "padded sequences"};
}

Sequential token_model(std::uint64_t seed) {
  manual_seed(seed);
  return Sequential{layers::Input{6}, layers::Embedding{7, 5}, layers::Tanh{}, layers::Dense{7}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(tokens_are_weighted_by_the_window_not_by_the_micro_batch) {
  // Real tokens per micro-batch of 2: 12, 11, 3, 2 (a window of 28 tokens).
  const Dataset data = padded_sequences({6, 6, 6, 5, 2, 1, 1, 1});
  const auto run = [&](std::int64_t batch, int accumulate, Normalization normalization) {
    Sequential m = token_model(40);
    m.compile(optim::SGD{.lr = 0.5, .momentum = 0.9}.accumulate(accumulate, {.normalization = normalization}),
              losses::CrossEntropy{});
    std::vector<StepRecord> records;
    callbacks::Lambda record_steps{{.micro_batch_end = [&](const StepRecord& r, const Logs&) { records.push_back(r); }}};
    m.fit(data, {.epochs = 3, .batch_size = batch, .callbacks = {record_steps}, .shuffle = false, .verbose = 0});
    return std::pair{std::move(m), records};
  };
  auto [large, large_records] = run(8, 1, Normalization::per_window);
  auto [accumulated, records] = run(2, 4, Normalization::per_window);
  auto [tutorial, tutorial_records] = run(2, 4, Normalization::per_micro_batch);
  // Token-weighted accumulation is one batch of all the sequences, to float32 rounding.
  expect_same_params(large, accumulated, "4 micro-batches of uneven tokens against one batch");
  // Each record knows its window's tokens and its own; the loss logged is per token.
  BOOST_TEST(records.at(0).window_tokens == 28);
  const std::vector<std::int64_t> tokens = {records[0].micro_batch_tokens, records[1].micro_batch_tokens,
                                            records[2].micro_batch_tokens, records[3].micro_batch_tokens};
  BOOST_TEST(tokens == (std::vector<std::int64_t>{12, 11, 3, 2}), boost::test_tools::per_element());
  BOOST_TEST(records[2].loss_weight == 1.0 / 28, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(tutorial_records[2].loss_weight == 1.0 / 3 / 4, boost::test_tools::tolerance(1e-12));
  // The tutorials' averaging per micro-batch is another gradient: far from float32 rounding.
  double largest = 0.0;
  const auto a = params_of(large), t = params_of(tutorial);
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[i].size(); ++j) largest = std::max(largest, double(std::abs(a[i][j] - t[i][j])));
  BOOST_TEST(largest > 1e-2);
  // verify_accumulation says why.
  Sequential m = token_model(41);
  m.compile(optim::SGD{}, losses::CrossEntropy{});
  const AccumulationCheck exact = verify_accumulation(m, data, {.sizes = {2, 2, 2, 2}});
  BOOST_TEST(exact.max_relative_difference < 1e-5);
  const AccumulationCheck averaged =
      verify_accumulation(m, data, {.sizes = {2, 2, 2, 2}, .normalization = Normalization::per_micro_batch});
  BOOST_TEST(averaged.max_relative_difference > 1e-2);
  BOOST_TEST(averaged.str().find("per-micro-batch averaging") != std::string::npos, averaged.str());
  BOOST_TEST(averaged.str().find("12, 11, 3, 2") != std::string::npos, averaged.str());
  // Options given where fit would not use them are refused, not ignored.
  Sequential n = token_model(42);
  n.compile(optim::SGD{}.accumulate(4), losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(
      n.fit(data, {.batch_size = 2, .accumulate_options = {.normalization = Normalization::per_micro_batch}, .verbose = 0}),
      ValueError, message_has({"accumulate_options", "compile()"}));
}
