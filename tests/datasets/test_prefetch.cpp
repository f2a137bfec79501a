// Prefetch: the order of the steps that keep a prefetched batch's copy from racing the compute
// stream (datasets/prefetch.hpp), checked with a copier that writes down what is asked of it.

#include "../test_util.hpp"

#include <cstdio>
#include <functional>
#include <map>
#include <memory>

#include <accrue/datasets/prefetch.hpp>

using namespace accrue;

namespace {

// The log of one run: "start 3 in 0", "compute after 0", "finish 1", "free 3"; the random test
// also wants to tell apart two starts of one batch, and reads "#n", the start's number.
using Log = std::shared_ptr<std::vector<std::string>>;

// A prefetched batch whose end (its device memory going back to the allocator) is written down.
struct Item {
  Item(Log l, std::int64_t i, int n) : log(std::move(l)), index(i), serial(n) {}
  Item(Item&& other) noexcept : log(std::move(other.log)), index(other.index), serial(other.serial) {}
  Item& operator=(Item&&) = delete;
  ~Item() {
    if (log) log->push_back(fmt::format("free {} #{}", index, serial));
  }
  Log log;
  std::int64_t index;
  int serial;
};

struct RecordingCopier {
  using Item = ::Item;
  explicit RecordingCopier(Log l) : log(std::move(l)) {}
  Log log;
  int starts = 0;
  Item start(const Batch& host, int slot) {
    log->push_back(fmt::format("start {} in {} #{}", host.index, slot, ++starts));
    return Item{log, host.index, starts};
  }
  void before_compute(int slot) noexcept { log->push_back(fmt::format("compute after {}", slot)); }
  void finish(int slot) noexcept { log->push_back(fmt::format("finish {}", slot)); }
};

Batch host(std::int64_t index) { return Batch{{Tensor::zeros({1})}, {Tensor::zeros({1})}, index}; }

std::vector<std::string> run(const std::function<void(Prefetch<RecordingCopier>&)>& steps) {
  Log log = std::make_shared<std::vector<std::string>>();
  {
    Prefetch<RecordingCopier> p{log};
    steps(p);
  }
  return *log;
}

using Steps = std::vector<std::string>;

}  // namespace

BOOST_AUTO_TEST_CASE(a_batch_taken_is_ordered_before_compute_and_freed_by_its_user) {
  const Steps got = run([](auto& p) {
    p.start(host(0));
    auto item = p.take(0);
    BOOST_TEST(item.has_value());
    p.start(host(1));  // slot 1, not used before: nothing to wait for
    item.reset();
    p.take(1);
    p.start(host(2));  // slot 0 again: its staging memory must be free of the copy of batch 0
  });
  const Steps want = {"start 0 in 0 #1", "compute after 0", "start 1 in 1 #2", "free 0 #1", "compute after 1",
                      "free 1 #2",       "finish 0",        "start 2 in 0 #3", "compute after 0", "free 2 #3",
                      "finish 0",        "finish 1"};
  BOOST_TEST(got == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_dropped_batch_waits_for_compute_to_follow_its_copy) {
  // reset() at an epoch's end, get() of another batch, get() without a next one, and the end of
  // the staging (a back-off or an exception): each frees the prefetched batch only after the
  // compute stream was told to wait for its copy.
  const Steps reset = run([](auto& p) {
    p.start(host(5));
    p.drop();
  });
  BOOST_TEST(reset == (Steps{"start 5 in 0 #1", "compute after 0", "free 5 #1", "finish 0"}), boost::test_tools::per_element());
  const Steps other = run([](auto& p) {
    p.start(host(5));
    BOOST_TEST(!p.take(7).has_value());
  });
  BOOST_TEST(other == (Steps{"start 5 in 0 #1", "compute after 0", "free 5 #1", "finish 0"}), boost::test_tools::per_element());
  const Steps destroyed = run([](auto& p) {
    p.start(host(1));
    p.take(1);
    p.start(host(2));
  });
  BOOST_TEST(destroyed == (Steps{"start 1 in 0 #1", "compute after 0", "free 1 #1", "start 2 in 1 #2",
                                 "compute after 1", "free 2 #2", "finish 0", "finish 1"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(every_free_of_an_untaken_batch_follows_a_wait_on_its_slot) {
  // Random sequences of the calls DeviceBatches makes: a prefetched batch never goes back to the
  // allocator before compute waits for its slot, and a slot is never refilled or released before
  // the host waited for its last copy.
  Generator gen{7};
  for (int trial = 0; trial < 200; ++trial) {
    const Steps got = run([&](auto& p) {
      std::optional<Item> held;
      for (int k = 0; k < 12; ++k) {
        const auto i = static_cast<std::int64_t>(gen.below(4));
        switch (gen.below(4)) {
          case 0: p.start(host(i)); break;
          case 1: held.reset(); if (auto t = p.take(i)) held.emplace(std::move(*t)); break;
          case 2: p.drop(); break;
          default: held.reset(); break;
        }
      }
    });
    std::map<int, int> latest;               // slot -> the start it holds
    std::map<int, bool> ordered, in_flight;  // per start: compute told to wait; per slot: a copy the host did not wait for
    for (const std::string& step : got) {
      long batch = 0, slot = 0;
      int serial = 0;
      if (std::sscanf(step.c_str(), "start %ld in %ld #%d", &batch, &slot, &serial) == 3) {
        BOOST_TEST(!in_flight[static_cast<int>(slot)], "slot " << slot << " refilled while its copy may run");
        latest[static_cast<int>(slot)] = serial;
        in_flight[static_cast<int>(slot)] = true;
      } else if (std::sscanf(step.c_str(), "compute after %ld", &slot) == 1) {
        ordered[latest[static_cast<int>(slot)]] = true;
      } else if (std::sscanf(step.c_str(), "finish %ld", &slot) == 1) {
        in_flight[static_cast<int>(slot)] = false;
      } else if (std::sscanf(step.c_str(), "free %ld #%d", &batch, &serial) == 2) {
        BOOST_TEST(ordered[serial], "start #" << serial << " freed before compute waited for its copy");
      }
    }
    for (const auto& [slot, flying] : in_flight) BOOST_TEST(!flying, "slot " << slot << " released with its copy running");
  }
}
