// RunData (dsl/fit/run_data.hpp), the data a run reads: its plan, this process's share of each
// micro-batch in the epoch's shuffled order, an epoch started where a checkpoint or a back-off
// resumes, and a plan made anew for a smaller micro-batch.

#include <accrue/dsl/fit/run_data.hpp>

#include <algorithm>
#include <numeric>

#include "../test_util.hpp"

using namespace accrue;
using accrue::detail::RunData;

namespace {

constexpr std::int64_t samples = 10;

Dataset numbered() {
  std::vector<float> x(samples), y(samples);
  for (std::int64_t i = 0; i < samples; ++i) x[static_cast<std::size_t>(i)] = y[static_cast<std::size_t>(i)] = static_cast<float>(i);
  return Dataset{Tensor::from(x, {samples, 1}), Tensor::from(y, {samples, 1}), "numbered"};
}

Sequential compiled() {
  Sequential m{layers::Input{1}, layers::Dense{1}};
  m.compile(optim::SGD{.lr = 0.1}, losses::MSE{});
  return m;
}

// The dataset indices of the epoch's micro-batches, as get() hands them, each checked against the
// features it carries.
std::vector<std::vector<std::int64_t>> epoch_samples(RunData& data, int epoch, std::int64_t from = 0) {
  std::vector<std::vector<std::int64_t>> out;
  for (const EpochWindow& w : data.begin_epoch(epoch, from))
    for (const MicroBatchSlot& slot : w.micro_batches) {
      const Batch b = data.get(slot.index);
      const std::vector<float> x = b.input().to_vector<float>();
      for (std::size_t i = 0; i < b.samples.size(); ++i) BOOST_REQUIRE_EQUAL(x[i], static_cast<float>(b.samples[i]));
      out.push_back(b.samples);
    }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_epoch_is_every_sample_once_in_its_shuffled_order) {
  const Dataset train = numbered();
  const TrainerOptions options{.epochs = 2, .batch_size = 3, .accumulate = 2};
  const Sequential model = compiled();
  RunData data{train, options};
  BOOST_TEST(data.read_ahead() == 0);  // in memory: nothing is read ahead
  data.plan(model, 3, 1);
  data.load(7, 0, 1, Device::cpu());
  BOOST_TEST(data.plan().micro_batches_per_epoch() == 4);
  const auto first = epoch_samples(data, 0), second = epoch_samples(data, 1);
  BOOST_TEST(data.epoch_micro_batches() == 4);
  for (const auto& epoch : {first, second}) {
    std::vector<std::int64_t> all;
    for (const auto& b : epoch) all.insert(all.end(), b.begin(), b.end());
    std::sort(all.begin(), all.end());
    std::vector<std::int64_t> every(samples);
    std::iota(every.begin(), every.end(), 0);
    BOOST_TEST(all == every, boost::test_tools::per_element());
    BOOST_TEST(epoch.back().size() == 1u);  // 10 = 3 + 3 + 3 + 1
  }
  BOOST_TEST(first != second);  // each epoch shuffles anew
  // The same seed, a new loader: the same order.
  data.load(7, 0, 1, Device::cpu());
  BOOST_TEST(epoch_samples(data, 0) == first);
  // Resuming at micro-batch 2 (the second window) gives the rest of the epoch.
  const auto rest = epoch_samples(data, 0, 2);
  BOOST_TEST(rest.size() == 2u);
  BOOST_TEST(rest[0] == first[2]);
  BOOST_TEST(rest[1] == first[3]);
}

BOOST_AUTO_TEST_CASE(a_back_off_plans_half_the_micro_batch_twice_as_often) {
  const Dataset train = numbered();
  const TrainerOptions options{.epochs = 1, .batch_size = 4, .accumulate = 2};
  const Sequential model = compiled();
  RunData data{train, options};
  data.plan(model, 4, 1);
  const std::int64_t effective = data.plan().max_effective_batch();
  BOOST_TEST(effective == 8);
  data.plan(model, 2, 2);
  data.load(1, 0, 1, Device::cpu());
  BOOST_TEST(data.plan().max_effective_batch() == effective);
  const auto windows = data.begin_epoch(0, 0);
  BOOST_TEST(windows.front().micro_batches.size() == 4u);
  BOOST_TEST(data.epoch_micro_batches() == 5);
}
