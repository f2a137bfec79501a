// Frozen layers (Layer::trainable, Sequential::freeze), as Keras's `trainable = False`: their
// parameters do not change in training, are not in the optimizer, and the memory plan's gradients
// and optimizer state are smaller by exactly their bytes; summary() counts them as non-trainable.

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

Sequential mlp() {
  manual_seed(31);
  return Sequential{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
}

std::vector<std::vector<float>> values(const std::vector<Tensor>& tensors) {
  std::vector<std::vector<float>> out;
  for (const Tensor& t : tensors) out.push_back(t.to_vector<float>());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_frozen_layer_does_not_change_and_costs_no_training_memory) {
  Sequential m = mlp(), plain = mlp();
  m.compile(optim::Adam{.lr = 1e-2}.accumulate(2).clip(1.0), losses::CrossEntropy{});
  plain.compile(optim::Adam{.lr = 1e-2}.accumulate(2).clip(1.0), losses::CrossEntropy{});
  const MemoryPlan before = m.memory_plan(8);
  m.freeze(0, 1);  // the first Dense: 6 x 16 + 16 parameters
  const std::size_t frozen_bytes = (6 * 16 + 16) * 4;
  const MemoryPlan after = m.memory_plan(8);
  BOOST_TEST(before.peak_of(MemoryCategory::gradients) - after.peak_of(MemoryCategory::gradients) == frozen_bytes);
  BOOST_TEST(before.peak_of(MemoryCategory::optimizer_state) - after.peak_of(MemoryCategory::optimizer_state) ==
             2 * frozen_bytes);  // Adam's two moments
  BOOST_TEST(m.optimizer().parameters().size() == 4u);
  BOOST_TEST(m.trainable_parameters().front().first == "2.weight");

  const auto frozen = values({m.layer(0).named_parameters()[0].second, m.layer(0).named_parameters()[1].second});
  const auto trained_before = values({m.layer(2).named_parameters()[0].second});
  m.fit(blobs(64, 32), {.epochs = 2, .batch_size = 8, .verbose = 0});
  BOOST_TEST((values({m.layer(0).named_parameters()[0].second, m.layer(0).named_parameters()[1].second}) == frozen));
  BOOST_TEST((values({m.layer(2).named_parameters()[0].second}) != trained_before));
  BOOST_TEST(!m.layer(0).named_parameters()[0].second.grad().defined());

  // The measured optimizer state: only the trainable parameters have moments.
  std::size_t state = 0;
  for (const auto& [name, t] : m.optimizer().state().tensors) state += t.nbytes();
  std::size_t all = 0;
  for (const Tensor& p : plain.parameters()) all += p.nbytes();
  BOOST_TEST(state == 2 * (all - frozen_bytes));
}

BOOST_AUTO_TEST_CASE(summary_counts_trainable_and_non_trainable) {
  Sequential m = mlp();
  m.layer(2).trainable(false);  // the second Dense: 16 x 16 + 16
  const std::string s = m.summary_str();
  BOOST_TEST_MESSAGE(s);
  // Dense 6 -> 16 (112) and 16 -> 4 (68) train; the frozen 16 -> 16 holds 272.
  BOOST_TEST(s.find("Trainable params: 180") != std::string::npos);
  BOOST_TEST(s.find("Non-trainable params: 272") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(trainable_set_before_build_and_unfreezing) {
  layers::Dense first{16};
  first.trainable(false);
  manual_seed(31);
  Sequential m{layers::Input{6}, first, layers::ReLU{}, layers::Dense{4}};
  BOOST_TEST(!m.layer(0).trainable());
  BOOST_TEST(!m.layer(0).named_parameters()[0].second.requires_grad());
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  BOOST_TEST(m.optimizer().parameters().size() == 2u);
  m.unfreeze(0, 1);
  BOOST_TEST(m.optimizer().parameters().size() == 4u);
  const auto before = values({m.layer(0).named_parameters()[0].second});
  m.fit(blobs(32, 33), {.epochs = 1, .batch_size = 8, .verbose = 0});
  BOOST_TEST((values({m.layer(0).named_parameters()[0].second}) != before));
  // Frozen after compile by the layer itself: the next fit makes the optimizer again.
  m.layer(0).trainable(false);
  const auto frozen = values({m.layer(0).named_parameters()[0].second});
  m.fit(blobs(32, 33), {.epochs = 1, .batch_size = 8, .verbose = 0});
  BOOST_TEST((values({m.layer(0).named_parameters()[0].second}) == frozen));
  BOOST_TEST(m.optimizer().parameters().size() == 2u);
  BOOST_CHECK_EXCEPTION(m.freeze(2, 9), ValueError, message_has({"freeze(2, 9)", "layers 0 to 3"}));
}

// Keras's rule for fine-tuning: a frozen BatchNorm normalizes with its running statistics and keeps
// them, also in training, so a frozen backbone computes what it was trained to compute. Unfrozen,
// it goes back to the batch's statistics and updates them.
BOOST_AUTO_TEST_CASE(a_frozen_batch_norm_runs_in_inference_mode) {
  manual_seed(7);
  Sequential m{layers::Input{3, 4, 4}, layers::Conv2d{4, 3, {.padding = 1}}, layers::BatchNorm2d{}, layers::ReLU{},
               layers::Flatten{}, layers::Dense{2}};
  const Tensor x = random_tensor({8, 3, 4, 4}, 2);
  {
    const TrainingModeGuard training{m, true};
    for (int i = 0; i < 3; ++i) (void)m.forward(x * 1.5f + 0.5f);  // running statistics away from (0, 1)
  }
  auto& bn = m.layer<layers::BatchNorm2d>(1);
  BOOST_TEST(m.layer(1).uses_batch_statistics());
  m.freeze(1, 2);
  BOOST_TEST(!bn.uses_batch_statistics());
  const auto statistics = values({bn.running_mean(), bn.running_var()});
  const std::int64_t counted = bn.batches_tracked();
  Tensor in_training, in_evaluation;
  {
    const TrainingModeGuard training{m, true};
    in_training = m.forward(x);
  }
  {
    const TrainingModeGuard evaluation{m, false};
    in_evaluation = m.forward(x);
  }
  check_close(in_training, in_evaluation, 0.0, 0.0, "a frozen BatchNorm in training");
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  m.fit(Dataset{x, Tensor::from(std::vector<std::int32_t>{0, 1, 0, 1, 0, 1, 0, 1}, {8})}, {.epochs = 2, .batch_size = 4, .verbose = 0});
  BOOST_TEST(values({bn.running_mean(), bn.running_var()}) == statistics);
  BOOST_TEST(bn.batches_tracked() == counted);
  m.unfreeze(1, 2);
  BOOST_TEST(bn.uses_batch_statistics());
  m.fit(Dataset{x, Tensor::from(std::vector<std::int32_t>{0, 1, 0, 1, 0, 1, 0, 1}, {8})}, {.epochs = 1, .batch_size = 4, .verbose = 0});
  BOOST_TEST(bn.batches_tracked() == counted + 2);
}
