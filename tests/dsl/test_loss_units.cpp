// LossUnits (dsl/fit/loss_units.hpp), what fit's loss counts and weighs: a micro-batch's samples
// or tokens, its window's over all processes (also a window carried over an epoch's end), and each
// sample's weight, against counts made here from the targets.

#include <accrue/dsl/fit/loss_units.hpp>

#include <numeric>

#include "../test_util.hpp"

using namespace accrue;
using accrue::detail::LossUnits;

namespace {

constexpr std::int64_t samples = 11, tokens = 5;

// Sequences of 5 int32 tokens whose last (i % 4) are padding (-100), inputs of one feature each.
Dataset padded_sequences() {
  std::vector<std::int32_t> y;
  for (std::int64_t i = 0; i < samples; ++i)
    for (std::int64_t t = 0; t < tokens; ++t) y.push_back(t >= tokens - i % 4 ? -100 : static_cast<std::int32_t>(t % 3));
  return Dataset{Tensor::zeros({samples, 1}), Tensor::from(y, {samples, tokens}), "sequences"};
}

// The tokens of `indices`, counted from the targets.
std::int64_t tokens_of(const Dataset& data, const std::vector<std::int64_t>& indices) {
  const std::vector<std::int32_t> y = data.targets().to_vector<std::int32_t>();
  std::int64_t n = 0;
  for (const std::int64_t i : indices)
    for (std::int64_t t = 0; t < tokens; ++t) n += y[static_cast<std::size_t>(i * tokens + t)] != -100;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(class_labels_count_one_each) {
  const Dataset data{Tensor::zeros({samples, 2}), Tensor::from({0.f, 1.f, 2.f, 0.f, 1.f, 2.f, 0.f, 1.f, 2.f, 0.f, 1.f}, {samples}), "classes"};
  LossUnits units{losses::CrossEntropy{}, data, 0, {}};
  BOOST_TEST(!units.counts_tokens());
  BOOST_TEST(units.total() == samples);
  const DataLoader loader{data, {.batch_size = 4, .shuffle = true, .seed = 3}};
  BOOST_TEST(units.of(loader[2]) == 3);  // the short last micro-batch
  const StepPlan plan{{.dataset_size = samples, .micro_batch = 4, .epochs = 1, .schedule = 2}};
  for (const MicroBatchSlot& slot : plan.epoch_slots(0)) BOOST_TEST(units.of_window(slot, loader) == slot.window_samples);
  BOOST_TEST(units.sample_weights().empty());
  BOOST_TEST(units.weights_of(loader[0]).empty());
}

// Windows of 4 micro-batches of 2 over 11 sequences (6 micro-batches an epoch) carry over the
// epochs' ends: each window's tokens are those of its micro-batches in each epoch's own order.
BOOST_AUTO_TEST_CASE(tokens_of_micro_batches_and_of_windows_carried_over_epochs) {
  const Dataset data = padded_sequences();
  LossUnits units{losses::CrossEntropy{}, data, 0, {}};
  BOOST_TEST(units.counts_tokens());
  std::vector<std::int64_t> all(samples);
  std::iota(all.begin(), all.end(), 0);
  BOOST_TEST(units.total() == tokens_of(data, all));
  const int epochs = 3;
  const StepPlan plan{{.dataset_size = samples, .micro_batch = 2, .epochs = epochs, .schedule = 4,
                       .last_window = LastWindow::carry}};
  // Every epoch's order, to count a window's micro-batches wherever they lie.
  std::vector<DataLoader> orders;
  for (int e = 0; e < epochs + 1; ++e) {
    orders.emplace_back(data, LoaderOptions{.batch_size = 2, .shuffle = true, .seed = 9});
    orders.back().set_epoch(e);
  }
  int carried = 0;
  for (int e = 0; e < epochs; ++e)
    for (const MicroBatchSlot& slot : plan.epoch_slots(e)) {
      const Batch batch = orders[static_cast<std::size_t>(e)][slot.index];
      BOOST_TEST(units.of(batch) == tokens_of(data, batch.samples));
      // The window's micro-batches: from its first, counting back over the epoch's start.
      std::int64_t want = 0;
      std::int64_t index = slot.index - slot.position;
      int epoch = e;
      while (index < 0) {
        index += orders[0].size();
        --epoch;
      }
      for (int k = 0; k < slot.window_micro_batches; ++k, ++index) {
        if (index == orders[0].size()) index = 0, ++epoch;
        want += tokens_of(data, orders[static_cast<std::size_t>(epoch)].sample_indices(index));
      }
      carried += slot.position > slot.index;
      BOOST_TEST(units.of_window(slot, orders[static_cast<std::size_t>(e)]) == want,
                 "epoch " << e << ", micro-batch " << slot.index << " of window " << slot.window);
      BOOST_TEST(units.window() == want);
    }
  BOOST_TEST(carried > 0);  // the case this test is for happened
}

BOOST_AUTO_TEST_CASE(class_weights_times_the_datasets_own) {
  std::vector<float> own(samples);
  for (std::size_t i = 0; i < own.size(); ++i) own[i] = 0.5f + static_cast<float>(i);
  const Dataset data =
      Dataset{Tensor::zeros({samples, 2}), Tensor::from({0.f, 1.f, 2.f, 0.f, 1.f, 2.f, 0.f, 1.f, 2.f, 0.f, 1.f}, {samples}), "classes"}
          .with_sample_weights(own);
  const std::map<std::int64_t, float> class_weight{{1, 4.0f}};
  LossUnits units{losses::CrossEntropy{}, data, 0, class_weight};
  const DataLoader loader{data, {.batch_size = 4, .shuffle = true, .seed = 5}};
  const Batch batch = loader[1];
  const std::vector<float> w = units.weights_of(batch);
  BOOST_REQUIRE(w.size() == batch.samples.size());
  for (std::size_t b = 0; b < w.size(); ++b) {
    const std::int64_t i = batch.samples[b];
    BOOST_TEST(w[b] == own[static_cast<std::size_t>(i)] * (i % 3 == 1 ? 4.0f : 1.0f));
  }
}
