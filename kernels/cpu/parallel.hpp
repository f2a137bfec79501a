#pragma once
// The CPU backend's one thread pool. Every parallel CPU kernel, GEMM included, runs on it, so the
// process never has more busy threads than cores (OpenBLAS is kept to one thread and handed
// slices). Workers spin briefly between jobs, because a training step issues many short kernels
// back to back, then sleep.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#include "../../framework/core/non_copyable.hpp"

namespace accrue::kernels::cpu {

/// Threads used by CPU kernels, the calling thread included: ACCRUE_NUM_THREADS when set, else
/// the number of cores divided among the processes mpirun started on this machine.
int num_threads();
/// Changes the thread count (1 runs everything on the calling thread).
void set_num_threads(int threads);

/// While one lives, the pool's threads sleep as soon as they finish a job instead of spinning for
/// the next: the thread that made it is about to block, and other threads (the data workers) can
/// have the cores.
class RestingWorkers : NonCopyable {
 public:
  RestingWorkers();
  ~RestingWorkers();
};

namespace detail {
void run_tasks(int tasks, void (*call)(void*, int), void* context);
}

/// Runs fn(task) for every task in [0, tasks) across the pool and waits. The first exception a
/// task throws is rethrown here. Called from inside a task, it runs serially.
template <class F>
void parallel_tasks(int tasks, F&& fn) {
  if (tasks <= 0) return;
  if (tasks == 1) {
    fn(0);
    return;
  }
  auto call = [](void* context, int task) { (*static_cast<std::remove_reference_t<F>*>(context))(task); };
  detail::run_tasks(tasks, call, static_cast<void*>(&fn));
}

/// Splits [0, n) into at most num_threads() contiguous chunks of at least `grain` elements and
/// runs fn(begin, end) on each.
template <class F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& fn) {
  if (n <= 0) return;
  const std::int64_t by_grain = grain > 0 ? n / grain : n;
  const std::int64_t chunks = by_grain < 1 ? 1 : (by_grain < num_threads() ? by_grain : num_threads());
  if (chunks == 1) {
    fn(std::int64_t{0}, n);
    return;
  }
  parallel_tasks(static_cast<int>(chunks), [&](int c) {
    const std::int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    fn(begin, end);
  });
}

/// Runs fn(begin, end) on contiguous chunks covering [0, units): each thread first takes a fixed
/// three quarters of an equal share, then the threads claim what is left as they come free, a
/// share of the rest at a time but at least `min_chunk` units (guided scheduling). Threads finish
/// within about one small chunk of each other, and a thread mostly works on neighbouring units.
template <class F>
void parallel_guided(std::int64_t units, std::int64_t min_chunk, F&& fn) {
  if (units <= 0) return;
  const int threads = num_threads();
  if (threads == 1 || units <= min_chunk) {
    fn(std::int64_t{0}, units);
    return;
  }
  const std::int64_t first = units * 3 / (4 * threads);
  std::atomic<std::int64_t> next{first * threads};
  parallel_tasks(threads, [&](int t) {
    if (first > 0) fn(first * t, first * (t + 1));
    std::int64_t begin = next.load(std::memory_order_relaxed), take = 0;
    for (;;) {
      do {
        if (begin >= units) return;
        take = std::min(units - begin, std::max(min_chunk, (units - begin) / (2 * threads)));
      } while (!next.compare_exchange_weak(begin, begin + take, std::memory_order_relaxed));
      fn(begin, begin + take);
      begin = next.load(std::memory_order_relaxed);
    }
  });
}

}  // namespace accrue::kernels::cpu
