// Weight averaging counted in optimizer steps: an EMA (or SWA) after N accumulated steps equals the
// one after N steps of the whole batch and the average of the weights each step left, and differs
// from an average pulled once per micro-batch (as Keras 3's use_ema under gradient accumulation);
// a skipped step does not move it; validation and the final weights use it; it is in the memory
// plan and in saved models. Resuming with it is in test_checkpoint.cpp.

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

Sequential mlp(std::uint64_t seed) { return blobs_mlp(seed); }

std::vector<double> flat(const std::vector<Tensor>& tensors) {
  std::vector<double> out;
  for (const Tensor& t : tensors)
    for (float v : t.to_vector<float>()) out.push_back(v);
  return out;
}

// Records the weights after every applied optimizer step, and after each micro-batch.
struct WeightLog final : Callback {
  Model* model = nullptr;
  std::vector<std::vector<double>> after_step, after_micro_batch;
  void on_train_begin(TrainingContext& c) override { model = c.model; }
  void on_micro_batch_end(const StepRecord&, const Logs&) override { after_micro_batch.push_back(flat(model->parameters())); }
  void on_optimizer_step(const StepRecord& r) override {
    if (r.status == StepRecord::Status::applied) after_step.push_back(flat(model->parameters()));
  }
};

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(ema_counts_optimizer_steps_not_micro_batches) {
  const Dataset data = blobs(96, 1);
  const double decay = 0.8;
  const optim::Recipe base = optim::SGD{.lr = 0.1, .momentum = 0.9}.ema({.decay = decay, .overwrite_at_end = false});
  Sequential accumulated = mlp(3), whole = mlp(3);
  const std::vector<double> initial = flat(accumulated.parameters());
  auto log = std::make_shared<WeightLog>();
  accumulated.compile(base.accumulate(4), losses::CrossEntropy{});
  accumulated.fit(data, {.epochs = 2, .batch_size = 8, .callbacks = {log}, .shuffle = false, .verbose = 0});
  whole.compile(base, losses::CrossEntropy{});
  whole.fit(data, {.epochs = 2, .batch_size = 32, .shuffle = false, .verbose = 0});

  // 96 samples in windows of 4 x 8: 3 steps an epoch, 6 updates, as with batches of 32.
  BOOST_TEST(accumulated.optimizer().average_updates() == 6);
  BOOST_TEST(whole.optimizer().average_updates() == 6);
  const std::vector<double> ema = flat(accumulated.optimizer().average());
  BOOST_TEST(max_difference(ema, flat(whole.optimizer().average())) < 2e-6);
  // The average of the weights each step left, from the weights before the first.
  std::vector<double> per_step = initial;
  for (const auto& w : log->after_step)
    for (std::size_t i = 0; i < w.size(); ++i) per_step[i] = decay * per_step[i] + (1 - decay) * w[i];
  BOOST_TEST(max_difference(ema, per_step) < 1e-6);
  // Pulled once per micro-batch (three of each four see the weights of the step before), the
  // average is another one.
  std::vector<double> per_micro_batch = initial;
  for (const auto& w : log->after_micro_batch)
    for (std::size_t i = 0; i < w.size(); ++i) per_micro_batch[i] = decay * per_micro_batch[i] + (1 - decay) * w[i];
  BOOST_TEST(log->after_micro_batch.size() == 24u);
  BOOST_TEST(max_difference(ema, per_micro_batch) > 1e-2);
  // overwrite_at_end = false: the model keeps its last weights.
  BOOST_TEST(max_difference(flat(accumulated.parameters()), log->after_step.back()) == 0.0);
}

BOOST_AUTO_TEST_CASE(warmup_and_swa_follow_their_formulas) {
  const Dataset data = blobs(64, 2);
  for (const bool swa : {false, true}) {
    Sequential m = mlp(4);
    const std::vector<double> initial = flat(m.parameters());
    auto log = std::make_shared<WeightLog>();
    const optim::Recipe sgd = optim::SGD{.lr = 0.1}.accumulate(2);
    m.compile(swa ? sgd.swa({.start = 3}) : sgd.ema({.decay = 0.99, .warmup = true}), losses::CrossEntropy{});
    m.fit(data, {.epochs = 1, .batch_size = 8, .callbacks = {log}, .shuffle = false, .verbose = 0});
    std::vector<double> expected = initial;
    for (std::size_t t = 0; t < log->after_step.size(); ++t) {
      const auto& w = log->after_step[t];
      // SWA: the equal average of the weights after steps 3, 4, ...; EMA with warmup: decay
      // min(0.99, (1 + n) / (10 + n)) at its n-th update.
      const double n = swa ? static_cast<double>(t) - 2.0 : static_cast<double>(t);
      if (swa && n < 0) continue;
      const double d = swa ? n / (n + 1) : std::min(0.99, (1 + n) / (10 + n));
      for (std::size_t i = 0; i < w.size(); ++i) expected[i] = d * expected[i] + (1 - d) * w[i];
    }
    // overwrite_at_end (the default): the model's weights are the average now.
    BOOST_TEST(max_difference(flat(m.parameters()), expected) < 1e-6, (swa ? "swa" : "ema with warmup"));
    BOOST_TEST(m.optimizer().average_updates() == (swa ? 2 : 4));
  }
}

BOOST_AUTO_TEST_CASE(overwrite_every_sets_the_weights_to_the_average_every_n_optimizer_steps) {
  // Keras's ema_overwrite_frequency, counted in optimizer steps: under accumulation 4 the weights
  // become the average after steps 3 and 6 (micro-batches 12 and 24), as with the whole batch.
  const Dataset data = blobs(96, 1);
  const optim::Recipe base =
      optim::SGD{.lr = 0.1, .momentum = 0.9}.ema({.decay = 0.8, .overwrite_at_end = false, .overwrite_every = 3});
  Sequential accumulated = mlp(3), whole = mlp(3);
  std::vector<std::int64_t> overwritten;
  std::vector<double> plain_step_gap;
  accumulated.compile(base.accumulate(4), losses::CrossEntropy{});
  const auto check = callbacks::Lambda{{.optimizer_step = [&](const StepRecord& r) {
    const double gap = max_difference(flat(accumulated.parameters()), flat(accumulated.optimizer().average()));
    if (gap == 0.0) overwritten.push_back(r.optimizer_step);
    else plain_step_gap.push_back(gap);
  }}};
  accumulated.fit(data, {.epochs = 2, .batch_size = 8, .callbacks = {check}, .shuffle = false, .verbose = 0});
  whole.compile(base, losses::CrossEntropy{});
  whole.fit(data, {.epochs = 2, .batch_size = 32, .shuffle = false, .verbose = 0});
  BOOST_TEST(overwritten == (std::vector<std::int64_t>{3, 6}), boost::test_tools::per_element());
  BOOST_TEST(*std::min_element(plain_step_gap.begin(), plain_step_gap.end()) > 1e-4);
  BOOST_TEST(max_difference(flat(accumulated.parameters()), flat(whole.parameters())) < 2e-6);
  // Training went on from the average: not the weights of a run that never overwrote them.
  Sequential never = mlp(3);
  never.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}.ema({.decay = 0.8, .overwrite_at_end = false}),
                losses::CrossEntropy{});
  never.fit(data, {.epochs = 2, .batch_size = 32, .shuffle = false, .verbose = 0});
  BOOST_TEST(max_difference(flat(never.parameters()), flat(whole.parameters())) > 1e-3);
  BOOST_TEST(base.str() == "SGD(lr=0.1, momentum=0.9) ema=0.8 (into the weights every 3 steps)");
}

BOOST_AUTO_TEST_CASE(model_checkpoint_saves_the_average_when_validation_uses_it) {
  test::TempDir dir{"ema_checkpoint"};
  const Dataset data = blobs(64, 7), val = blobs(32, 8);
  const auto saved = [&](const std::string& file) {
    Sequential loaded = mlp(9);
    loaded.load_weights(file);
    return flat(loaded.parameters());
  };
  for (const std::optional<bool> averaged : {std::optional<bool>{}, std::optional<bool>{false}}) {
    Sequential m = mlp(9);
    m.compile(optim::Adam{.lr = 1e-2}.ema({.decay = 0.7, .overwrite_at_end = false}), losses::CrossEntropy{});
    const std::string folder = dir.file(averaged ? "training" : "average");
    m.fit(data, {.epochs = 2,
                 .batch_size = 16,
                 .validation = val,
                 .callbacks = {callbacks::ModelCheckpoint{folder, {.keep_best = true, .averaged = averaged}}},
                 .verbose = 0});
    const std::vector<double> last = saved(folder + "/last.safetensors");
    // By default the average (validation ran on it); asked otherwise, the training weights; the
    // model keeps training weights either way (overwrite_at_end = false).
    BOOST_TEST(max_difference(last, flat(averaged ? m.parameters() : m.optimizer().average())) == 0.0);
    BOOST_TEST(max_difference(last, flat(averaged ? m.optimizer().average() : m.parameters())) > 1e-4);
  }
  Sequential plain = mlp(9);
  plain.compile(optim::Adam{}, losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(plain.fit(data, {.callbacks = {callbacks::ModelCheckpoint{dir.file("x"), {.averaged = true}}},
                                         .verbose = 0}),
                        ValueError, message_has({"ModelCheckpoint", "averaged = true", ".ema()"}));
}

BOOST_AUTO_TEST_CASE(a_skipped_step_does_not_move_the_average) {
  std::vector<float> x = blobs(64, 5).inputs().to_vector();
  x[6 * 10] = std::nanf("");  // sample 10 is in the second window of 2 x 8
  const Dataset data{Tensor::from(x, {64, 6}), blobs(64, 5).targets(), "a NaN in sample 10"};
  Sequential m = mlp(6);
  m.compile(optim::SGD{.lr = 0.1}.accumulate(2).ema({.decay = 0.9}), losses::CrossEntropy{});
  m.fit(data, {.epochs = 1, .batch_size = 8, .callbacks = {callbacks::NanGuard{}}, .shuffle = false, .verbose = 0});
  BOOST_TEST(m.optimizer().steps() == 3);
  BOOST_TEST(m.optimizer().average_updates() == 3);
}

BOOST_AUTO_TEST_CASE(validation_runs_on_the_average) {
  const Dataset data = blobs(64, 7), val = blobs(32, 8);
  Sequential m = mlp(9);
  m.compile(optim::Adam{.lr = 1e-2}.ema({.decay = 0.7, .overwrite_at_end = false}), losses::CrossEntropy{});
  const History h = m.fit(data, {.epochs = 1, .batch_size = 16, .validation = val, .verbose = 0});
  const double raw = m.evaluate(val).logs.at("loss");
  m.optimizer().swap_average();
  const double averaged = m.evaluate(val).logs.at("loss");
  m.optimizer().swap_average();
  BOOST_TEST(h.logs()[0].at("val_loss") == averaged, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(std::abs(raw - averaged) > 1e-6);
}

BOOST_AUTO_TEST_CASE(the_average_is_planned_and_saved) {
  Sequential plain = mlp(10), averaged = mlp(10);
  plain.compile(optim::Adam{}, losses::CrossEntropy{});
  averaged.compile(optim::Adam{}.ema(), losses::CrossEntropy{});
  const std::size_t param_bytes = 4 * (6 * 16 + 16 + 16 * 4 + 4);
  const auto state = [](Sequential& m) { return m.memory_plan(8).peak_of(MemoryCategory::optimizer_state); };
  BOOST_TEST(state(averaged) == state(plain) + param_bytes);
  test::TempDir dir{"weight_average"};
  const std::string path = (dir.path / "m.safetensors").string();
  Sequential swa = mlp(10);
  swa.compile(optim::SGD{.lr = 0.1}.accumulate(2).swa({.start = 5, .validate = false}), losses::CrossEntropy{});
  swa.save(path);
  BOOST_TEST((load_model(path).recipe() == swa.recipe()));
  BOOST_TEST(swa.recipe().str() == "SGD(lr=0.1) accumulate=2 swa from step 5");
  BOOST_CHECK_EXCEPTION(plain.compile(optim::SGD{}.ema({.decay = 1.0}), losses::CrossEntropy{}), ValueError,
                        message_has({"ema", "decay", "[0, 1)"}));
}

BOOST_AUTO_TEST_CASE(batch_norm_statistics_recomputed_for_the_average) {
  // torch.optim.swa_utils.update_bn: the running statistics become the average over one pass of
  // the batches' statistics, computed with the averaged weights.
  const Dataset data = blobs(64, 11);
  manual_seed(12);
  Sequential m{layers::Input{6}, layers::Dense{8}, layers::BatchNorm1d{}, layers::ReLU{}, layers::Dense{4}};
  m.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}.swa({.start = 2}), losses::CrossEntropy{});
  m.fit(data, {.epochs = 2, .batch_size = 8, .verbose = 0});
  const auto& bn = m.layer<layers::BatchNorm1d>(1);
  const std::vector<float> trained = bn.running_mean().to_vector<float>();
  m.update_batch_norm(data, 16);
  std::vector<double> expected(8, 0.0);
  {
    const NoGradGuard no_grad;
    for (std::int64_t b = 0; b < 64; b += 16) {
      const std::vector<float> h = m.layer(0).forward(ops::narrow(data.inputs(), b, b + 16)).to_vector<float>();
      for (std::size_t i = 0; i < h.size(); ++i) expected[i % 8] += h[i] / 16.0 / 4.0;
    }
  }
  const std::vector<float> updated = bn.running_mean().to_vector<float>();
  for (std::size_t c = 0; c < 8; ++c) BOOST_TEST(updated[c] == expected[c], boost::test_tools::tolerance(1e-5));
  BOOST_TEST(bn.batches_tracked() == 4);
  BOOST_TEST(max_difference({trained.begin(), trained.end()}, {updated.begin(), updated.end()}) > 1e-3);
  BOOST_TEST(m.training());  // the model's mode is as it was
}
