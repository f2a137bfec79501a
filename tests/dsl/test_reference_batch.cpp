// Batch-size rules applied: reference_batch(R) scales the learning rate to each window's planned
// effective batch B, linearly for SGD and LARS and by the square root for the adaptive optimizers,
// rescales when the accumulation changes, ramps from x1 over Goyal et al.'s gradual warmup, and
// the banner says what was scaled and why.

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

Sequential mlp() {
  manual_seed(21);
  return Sequential{layers::Input{6}, layers::Dense{8}, layers::ReLU{}, layers::Dense{4}};
}

// The learning rate of every applied step.
struct LrLog final : Callback {
  std::vector<double> lrs;
  void on_optimizer_step(const StepRecord& r) override {
    if (r.status == StepRecord::Status::applied) lrs.push_back(r.lr);
  }
};

std::vector<std::vector<float>> trained(const optim::Recipe& recipe, std::int64_t batch, std::vector<double>* lrs = nullptr,
                                        int epochs = 1, std::FILE* banner = nullptr) {
  Sequential m = mlp();
  m.compile(recipe, losses::CrossEntropy{});
  auto log = std::make_shared<LrLog>();
  FitOptions o{.epochs = epochs, .batch_size = batch, .callbacks = {log}, .shuffle = false, .verbose = 0};
  if (banner != nullptr) o.callbacks.push_back(callbacks::ProgressBar{{.mode = callbacks::ProgressBarOptions::Mode::lines, .stream = banner}});
  m.fit(blobs(128, 22), o);
  if (lrs != nullptr) *lrs = log->lrs;
  std::vector<std::vector<float>> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.to_vector<float>());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_optimizer_scales_by_its_rule) {
  // Micro-batches of 8 accumulated 8: effective batch 64 against a reference of 16, x4 linearly,
  // x2 by the square root; the same as the scaled learning rate written by hand.
  BOOST_TEST((trained(optim::SGD{.lr = 0.05, .momentum = 0.9}.accumulate(8).reference_batch(16), 8) ==
              trained(optim::SGD{.lr = 0.2, .momentum = 0.9}.accumulate(8), 8)));
  BOOST_TEST((trained(optim::LARS{.lr = 0.5, .trust_coefficient = 0.02}.accumulate(8).reference_batch(16), 8) ==
              trained(optim::LARS{.lr = 2.0, .trust_coefficient = 0.02}.accumulate(8), 8)));
  BOOST_TEST((trained(optim::Adam{.lr = 1e-3}.accumulate(8).reference_batch(16), 8) ==
              trained(optim::Adam{.lr = 2e-3}.accumulate(8), 8)));
  BOOST_TEST((trained(optim::LAMB{.lr = 1e-3}.accumulate(8).reference_batch(16), 8) ==
              trained(optim::LAMB{.lr = 2e-3}.accumulate(8), 8)));
  // A rule asked for overrides the optimizer's.
  BOOST_TEST((trained(optim::AdamW{.lr = 1e-3}.accumulate(8).reference_batch(16, {.rule = optim::ScalingRule::linear}), 8) ==
              trained(optim::AdamW{.lr = 4e-3}.accumulate(8), 8)));
  // The effective batch equal to the reference changes nothing.
  BOOST_TEST((trained(optim::SGD{.lr = 0.05}.accumulate(2).reference_batch(16), 8) ==
              trained(optim::SGD{.lr = 0.05}.accumulate(2), 8)));
  BOOST_TEST((optim::Recipe{optim::Lion{}}.scaling_rule() == optim::ScalingRule::sqrt));
  BOOST_TEST(optim::Recipe{optim::LARS{}}.reference_batch(256).batch_scaling(2048) == 8.0);
}

BOOST_AUTO_TEST_CASE(an_accumulation_schedule_rescales_at_each_change) {
  // Epoch 0 accumulates 2 (16 samples: x1 against 16), epoch 1 accumulates 8 (64: x4).
  std::vector<double> lrs;
  trained(optim::SGD{.lr = 0.1}.accumulate({{0, 2}, {1, 8}}).reference_batch(16), 8, &lrs, 2);
  BOOST_REQUIRE(lrs.size() == 8u + 2u);
  for (std::size_t i = 0; i < 8; ++i) BOOST_TEST(lrs[i] == 0.1);
  for (std::size_t i = 8; i < 10; ++i) BOOST_TEST(lrs[i] == 0.4, boost::test_tools::tolerance(1e-15));
}

BOOST_AUTO_TEST_CASE(gradual_warmup_ramps_from_the_reference_rate) {
  // 128 samples in windows of 32 (x4 against 8): 4 steps an epoch; warmup over 1 epoch = 4 steps,
  // x1, x1.75, x2.5, x3.25, then x4.
  std::vector<double> lrs;
  FILE* banner = std::tmpfile();
  trained(optim::SGD{.lr = 0.1}.accumulate(4).reference_batch(8, {.warmup_epochs = 1}), 8, &lrs, 2, banner);
  const std::vector<double> expected{0.1, 0.175, 0.25, 0.325, 0.4, 0.4, 0.4, 0.4};
  BOOST_REQUIRE(lrs.size() == expected.size());
  for (std::size_t i = 0; i < lrs.size(); ++i) BOOST_TEST(lrs[i] == expected[i], boost::test_tools::tolerance(1e-12));
  const std::string text = test::read_file(banner);
  std::fclose(banner);
  BOOST_TEST_MESSAGE(text);
  for (const char* part : {"learning rate scaled x4 to 0.4 for the effective batch 32 against the reference 8",
                           "the linear rule, lr x B/R (SGD and LARS's, Goyal et al.)",
                           "reached over the first 4 optimizer steps (1 epochs, Goyal et al.'s gradual warmup from x1)"})
    BOOST_CHECK_MESSAGE(text.find(part) != std::string::npos, "the banner lacks '" << part << "'");
}

BOOST_AUTO_TEST_CASE(the_reference_is_checked_and_saved) {
  Sequential m = mlp();
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}.reference_batch(0), losses::CrossEntropy{}), ValueError,
                        message_has({"reference_batch(0)"}));
  const optim::Recipe r = optim::Adam{}.accumulate(4).reference_batch(256, {.warmup_epochs = 5});
  BOOST_TEST(r.str() == "Adam(lr=0.001) accumulate=4 reference_batch=256 (sqrt rule, warmup 5 epochs)");
  m.compile(r, losses::CrossEntropy{});
  test::TempDir dir{"reference_batch"};
  const std::string path = (dir.path / "m.safetensors").string();
  m.save(path);
  BOOST_TEST((load_model(path).recipe() == r));
}
