// Datasets that are not two tensors in memory: a user's own type, selections of one, and the
// background queue that reads their batches ahead.

#include "../test_util.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <accrue/datasets/batch_queue.hpp>
#include <accrue/datasets/transforms.hpp>

using namespace accrue;
using namespace accrue::test;

namespace {

// Sample i: input (2,) = (i, -i), target i; it counts its reads.
struct Numbers {
  std::int64_t n;
  std::shared_ptr<std::atomic<int>> reads = std::make_shared<std::atomic<int>>(0);
  std::int64_t size() const { return n; }
  Example get(std::int64_t i) const {
    ++*reads;
    return {Tensor::from({static_cast<float>(i), -static_cast<float>(i)}, {2}),
            Tensor::from(std::vector<std::int32_t>{static_cast<std::int32_t>(i)}, {})};
  }
};

Dataset in_memory(std::int64_t n) {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  for (std::int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(-static_cast<float>(i));
    y.push_back(static_cast<std::int32_t>(i));
  }
  return Dataset{Tensor::from(x, {n, 2}), Tensor::from(y, {n}), "numbers"};
}

void check_same_batches(const DataLoader& a, const DataLoader& b) {
  BOOST_REQUIRE(a.size() == b.size());
  for (std::int64_t i = 0; i < a.size(); ++i) {
    BOOST_TEST(a[i].input().to_vector<float>() == b[i].input().to_vector<float>());
    BOOST_TEST(a[i].target().to_vector<std::int32_t>() == b[i].target().to_vector<std::int32_t>());
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_users_type_gives_the_batches_of_the_same_data_in_memory) {
  const Dataset mine = Dataset::from(Numbers{23}, "numbers");
  BOOST_TEST(!mine.in_memory());
  BOOST_TEST(mine.size() == 23);
  BOOST_TEST(mine.sample_shape() == Shape({2}));
  BOOST_TEST(mine.layout().target().dtype == DType::i32);
  for (const bool shuffle : {false, true})
    check_same_batches(DataLoader{mine, {.batch_size = 5, .shuffle = shuffle, .seed = 3, .shard = 1, .shards = 2}},
                       DataLoader{in_memory(23), {.batch_size = 5, .shuffle = shuffle, .seed = 3, .shard = 1, .shards = 2}});
  // Subsets, selections and splits of it are the same samples as those of the tensors.
  const auto [a, b] = mine.split(0.3, 8);
  const auto [c, d] = in_memory(23).split(0.3, 8);
  BOOST_TEST(a.targets().to_vector<std::int32_t>() == c.targets().to_vector<std::int32_t>());
  BOOST_TEST(b.slice(0, b.size()).input().to_vector<float>() == d.inputs().to_vector<float>());
  BOOST_TEST(mine.take(4).to_memory().inputs().to_vector<float>() == in_memory(4).inputs().to_vector<float>());
  BOOST_TEST(mine.fingerprint() == Dataset::from(Numbers{23}).fingerprint());
  BOOST_TEST(mine.fingerprint() != Dataset::from(Numbers{22}).fingerprint());
  // Two lambdas are a dataset too.
  const Dataset lambdas = Dataset::from(5, [](std::int64_t i) { return Numbers{5}.get(i); }, "lambdas");
  BOOST_TEST(lambdas.slice(1, 3).target().to_vector<std::int32_t>() == std::vector<std::int32_t>({1, 2}));
}

BOOST_AUTO_TEST_CASE(a_users_type_with_inconsistent_samples_is_named) {
  const Dataset ragged = Dataset::from(
      4, [](std::int64_t i) { return Example{Tensor::zeros({i == 2 ? 3 : 2}), Tensor::zeros({})}; }, "ragged");
  BOOST_CHECK_EXCEPTION(ragged.slice(0, 4), ShapeError, message_has({"ragged", "sample 2", "(3,)", "(2,)"}));
  BOOST_CHECK_EXCEPTION(ragged.inputs(), ValueError, message_has({"ragged", "DataLoader", "to_memory"}));
}

BOOST_AUTO_TEST_CASE(the_queue_gives_what_the_loader_gives_with_any_number_of_workers) {
  const Dataset plain = Dataset::from(Numbers{100}, "numbers");
  DataLoader loader{plain, {.batch_size = 7, .shuffle = true, .seed = 1}};
  for (const int workers : {0, 1, 3}) {
    BatchQueue queue{loader, {.workers = workers, .depth = 2}};
    for (int epoch = 0; epoch < 2; ++epoch) {
      loader.set_epoch(epoch);
      for (std::int64_t i = 0; i < loader.size(); ++i) {
        const Batch b = queue.get(i);
        BOOST_TEST(b.index == i);
        BOOST_TEST(b.target().to_vector<std::int32_t>() == loader[i].target().to_vector<std::int32_t>());
      }
    }
    // Asking out of order starts again there.
    BOOST_TEST(queue.get(5).target().to_vector<std::int32_t>() == loader[5].target().to_vector<std::int32_t>());
    BOOST_TEST(queue.get(2).target().to_vector<std::int32_t>() == loader[2].target().to_vector<std::int32_t>());
  }
}

BOOST_AUTO_TEST_CASE(the_queue_holds_at_most_its_depth_counted_as_data) {
  Numbers numbers{64};
  const Dataset data = Dataset::from(numbers, "numbers");
  const DataLoader loader{data, {.batch_size = 4}};
  const std::size_t batch_bytes = 4 * (2 * sizeof(float) + sizeof(std::int32_t));
  const std::size_t before = memory_stats(Device::cpu()).live_of(MemoryCategory::data);
  BatchQueue queue{loader, {.workers = 2, .depth = 3}};
  (void)queue.get(0);
  // Wait until the workers have filled the queue: three batches past batch 0, no more.
  for (int k = 0; k < 200 && *numbers.reads < 4 * 4; ++k) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_TEST(*numbers.reads == 4 * 4 + 1);  // sample 0 read once for the layout, then batches 0 to 3
  const std::size_t held = memory_stats(Device::cpu()).live_of(MemoryCategory::data) - before;
  BOOST_TEST(held == 3 * batch_bytes);
}

BOOST_AUTO_TEST_CASE(a_workers_error_reaches_the_batch_it_belongs_to) {
  const Dataset failing = Dataset::from(
      40,
      [](std::int64_t i) -> Example {
        if (i == 29) throw ValueError("sample 29: cannot decode 'broken.png'");
        return {Tensor::zeros({2}), Tensor::zeros({})};
      },
      "failing");
  const DataLoader loader{failing, {.batch_size = 10}};
  BatchQueue queue{loader, {.workers = 2}};
  BOOST_TEST(queue.get(0).size() == 10);
  BOOST_TEST(queue.get(1).size() == 10);
  BOOST_CHECK_EXCEPTION(queue.get(2), ValueError, message_has({"broken.png"}));
}

BOOST_AUTO_TEST_CASE(batches_the_workers_do_not_deliver_are_read_by_the_trainer) {
  // Workers that never finish a read (as SCHED_IDLE workers get no CPU while other programs keep
  // the cores busy): the trainer reads every batch itself, without waiting more than a grace
  // period each, the same batches; what the workers finish late is dropped, not held.
  struct Gate {
    std::mutex mutex;
    std::condition_variable opened;
    bool open = false;
    std::thread::id trainer = std::this_thread::get_id();
  };
  auto gate = std::make_shared<Gate>();
  const Dataset stuck = Dataset::from(
      60,
      [gate](std::int64_t i) {
        if (std::this_thread::get_id() != gate->trainer) {
          std::unique_lock lock{gate->mutex};
          gate->opened.wait(lock, [&] { return gate->open; });
        }
        return Numbers{60}.get(i);
      },
      "stuck");
  DataLoader loader{stuck, {.batch_size = 6, .shuffle = true, .seed = 2}};
  const DataLoader expected{Dataset::from(Numbers{60}), {.batch_size = 6, .shuffle = true, .seed = 2}};
  const std::size_t before = memory_stats(Device::cpu()).live_of(MemoryCategory::data);
  {
    BatchQueue queue{loader, {.workers = 2, .depth = 2}};
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < loader.size(); ++i)
      BOOST_TEST(queue.get(i).target().to_vector<std::int32_t>() == expected[i].target().to_vector<std::int32_t>());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    BOOST_TEST(seconds < 2.0);  // at most the two stuck batches' grace, 20 ms each before any estimate
    BOOST_TEST(queue.waited_seconds() > 0.0);
    {
      const std::lock_guard lock{gate->mutex};
      gate->open = true;
    }
    gate->opened.notify_all();
  }
  BOOST_TEST(memory_stats(Device::cpu()).live_of(MemoryCategory::data) == before);
}
