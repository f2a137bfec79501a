#include "../test_util.hpp"

#include <accrue/kernels/cpu/parallel.hpp>
#include <atomic>

using namespace accrue;
namespace cpu = accrue::kernels::cpu;

BOOST_AUTO_TEST_CASE(parallel_for_covers_every_index_once) {
  for (std::int64_t n : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    cpu::parallel_for(n, 100, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
    });
    for (auto& h : hits) BOOST_REQUIRE(h.load() == 1);
  }
}

// Every unit once, in chunks of at least min_chunk (the last one excepted), on 1 to 4 threads.
BOOST_AUTO_TEST_CASE(parallel_guided_covers_every_unit_once_in_chunks) {
  const int before = cpu::num_threads();
  for (const int threads : {1, 2, 3, 4}) {
    cpu::set_num_threads(threads);
    for (const std::int64_t units : {0, 1, 5, 17, 88, 1088, 100003}) {
      for (const std::int64_t min_chunk : {1, 3, 64}) {
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(units));
        std::atomic<int> short_chunks{0};
        cpu::parallel_guided(units, min_chunk, [&](std::int64_t b, std::int64_t e) {
          BOOST_REQUIRE(0 <= b && b < e && e <= units);
          if (e - b < min_chunk && e != units) ++short_chunks;
          for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
        });
        for (auto& h : hits) BOOST_REQUIRE(h.load() == 1);
        // Only the fixed first chunks may be shorter than min_chunk, when the shares are small.
        if (units * 3 / (4 * threads) >= min_chunk) BOOST_REQUIRE(short_chunks.load() == 0);
      }
    }
  }
  cpu::set_num_threads(before);
}

BOOST_AUTO_TEST_CASE(exceptions_reach_the_caller_and_the_pool_survives) {
  BOOST_CHECK_THROW(cpu::parallel_tasks(8, [](int t) {
    if (t == 5) throw ValueError("task 5 failed");
  }), ValueError);
  std::atomic<int> sum{0};
  cpu::parallel_tasks(16, [&](int t) { sum += t; });
  BOOST_TEST(sum.load() == 120);
}

BOOST_AUTO_TEST_CASE(nested_parallelism_runs_inline) {
  std::atomic<int> count{0};
  cpu::parallel_tasks(4, [&](int) { cpu::parallel_tasks(4, [&](int) { ++count; }); });
  BOOST_TEST(count.load() == 16);
}

BOOST_AUTO_TEST_CASE(thread_count_can_change) {
  const int before = cpu::num_threads();
  cpu::set_num_threads(1);
  BOOST_TEST(cpu::num_threads() == 1);
  std::atomic<int> count{0};
  cpu::parallel_tasks(3, [&](int) { ++count; });
  BOOST_TEST(count.load() == 3);
  cpu::set_num_threads(before);
  BOOST_TEST(cpu::num_threads() == before);
  BOOST_CHECK_THROW(cpu::set_num_threads(0), ValueError);
}

BOOST_AUTO_TEST_CASE(many_short_jobs_back_to_back) {
  // The pattern of a training step: thousands of small jobs; none may be lost or run twice.
  std::atomic<long> total{0};
  for (int job = 0; job < 20000; ++job) cpu::parallel_tasks(2, [&](int t) { total += t + 1; });
  BOOST_TEST(total.load() == 20000L * 3);
}

BOOST_AUTO_TEST_CASE(resting_workers_still_take_every_job) {
  // While a RestingWorkers lives (the trainer waits for data), workers sleep between jobs instead
  // of spinning: every job must still run exactly once, nested and overlapping rests included,
  // and the pool spins again after.
  const int before = cpu::num_threads();
  cpu::set_num_threads(3);
  std::atomic<long> total{0};
  {
    const cpu::RestingWorkers outer;
    for (int job = 0; job < 2000; ++job) {
      const cpu::RestingWorkers inner;
      cpu::parallel_tasks(3, [&](int t) { total += t + 1; });
    }
  }
  for (int job = 0; job < 2000; ++job) cpu::parallel_tasks(3, [&](int t) { total += t + 1; });
  BOOST_TEST(total.load() == 4000L * 6);
  cpu::set_num_threads(before);
}

BOOST_AUTO_TEST_CASE(workers_stopped_before_they_start_do_not_hang) {
  // Regression: a worker thread that first ran after the pool had begun shutting down slept
  // forever, and the join at exit hung. Resizing at once after creating workers provokes it.
  const int before = cpu::num_threads();
  for (int i = 0; i < 300; ++i) {
    cpu::set_num_threads(3);
    cpu::set_num_threads(1);
  }
  cpu::set_num_threads(before);
  std::atomic<int> count{0};
  cpu::parallel_tasks(4, [&](int) { ++count; });
  BOOST_TEST(count.load() == 4);
}
