#include "parallel.hpp"

#include <algorithm>
#include <atomic>
#include <sched.h>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../framework/core/error.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace accrue::kernels::cpu {
namespace {

void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

int threads_from_env() {
  if (const char* env = std::getenv("ACCRUE_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= 1024) return static_cast<int>(n);
    throw ValueError(fmt::format("ACCRUE_NUM_THREADS={} is not a thread count between 1 and 1024", env));
  }
  // The cores this process may run on (mpirun binds each process to its own, taskset and cgroups
  // restrict them), shared with the other processes mpirun started on this machine when they are
  // not bound (Open MPI's and MPICH's names for their count).
  cpu_set_t allowed;
  const int cores = sched_getaffinity(0, sizeof allowed, &allowed) == 0
                        ? CPU_COUNT(&allowed)
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int local_processes = 1;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* env = std::getenv(name)) local_processes = std::max(1, std::atoi(env));
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, std::min(cores, machine / local_processes));
}

thread_local bool inside_task = false;

// A job lives on the caller's stack. Workers reach it through `job_` only while registered in
// `in_job_`; the caller clears `job_` and waits for `in_job_` to drain before returning, so no
// worker can touch a job after its frame is gone.
struct Job {
  void (*call)(void*, int);
  void* context;
  int tasks;
  std::atomic<int> next{0};
  std::atomic<int> done{0};
  std::mutex error_mutex;
  std::exception_ptr error;
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { resize(threads); }
  ~ThreadPool() { stop_workers(); }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  void rest(int change) { resting_.fetch_add(change); }

  void resize(int threads) {
    const std::lock_guard lock{run_mutex_};
    stop_workers();
    stop_.store(false);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  void run(int tasks, void (*call)(void*, int), void* context) {
    if (inside_task || workers_.empty()) {
      for (int t = 0; t < tasks; ++t) call(context, t);
      return;
    }
    const std::lock_guard lock{run_mutex_};  // one job at a time; callers on other threads queue
    Job job;
    job.call = call;
    job.context = context;
    job.tasks = tasks;
    job_.store(&job);
    advance_generation();
    work(job);
    while (job.done.load() < tasks) cpu_relax();
    job_.store(nullptr);
    while (in_job_.load() != 0) cpu_relax();
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  static void work(Job& job) {
    inside_task = true;
    for (;;) {
      const int t = job.next.fetch_add(1);
      if (t >= job.tasks) break;
      try {
        job.call(job.context, t);
      } catch (...) {
        const std::lock_guard lock{job.error_mutex};
        if (!job.error) job.error = std::current_exception();
      }
      job.done.fetch_add(1);
    }
    inside_task = false;
  }

  void worker_loop() {
    std::uint64_t seen = generation_.load();
    for (;;) {
      // Spin for a few tens of microseconds: the next kernel of a training step usually comes
      // sooner than a wake-up from sleep would.
      std::uint64_t now = generation_.load();
      for (int spins = 0; now == seen && spins < 20000 && resting_.load(std::memory_order_relaxed) == 0; ++spins) {
        cpu_relax();
        now = generation_.load(std::memory_order_relaxed);
      }
      // stop_ is checked as well as the generation: a worker that starts after the pool began
      // shutting down has already seen the last generation.
      if (stop_.load()) return;
      if (now == seen) {
        std::unique_lock lock{sleep_mutex_};
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen || stop_.load(); });
        sleepers_.fetch_sub(1);
        continue;
      }
      seen = now;
      in_job_.fetch_add(1);
      if (Job* job = job_.load()) work(*job);
      in_job_.fetch_sub(1);
    }
  }

  // Publishes a new generation and wakes sleeping workers. A worker registers in sleepers_ before
  // it checks the generation under the mutex, and this reads sleepers_ after changing the
  // generation (both sequentially consistent), so a worker is either woken or sees the change.
  void advance_generation() {
    generation_.fetch_add(1);
    if (sleepers_.load() != 0) {
      { const std::lock_guard lock{sleep_mutex_}; }
      wake_.notify_all();
    }
  }

  void stop_workers() {
    if (workers_.empty()) return;
    stop_.store(true);
    advance_generation();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> resting_{0};  // RestingWorkers alive
  std::atomic<Job*> job_{nullptr};
  std::atomic<int> in_job_{0};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
};

ThreadPool& pool() {
  static ThreadPool instance{threads_from_env()};
  return instance;
}

}  // namespace

int num_threads() { return pool().threads(); }

void set_num_threads(int threads) {
  ACCRUE_CHECK(threads >= 1, "set_num_threads needs at least 1 thread, got {}", threads);
  if (threads != pool().threads()) pool().resize(threads);
}

RestingWorkers::RestingWorkers() { pool().rest(1); }
RestingWorkers::~RestingWorkers() { pool().rest(-1); }

namespace detail {
void run_tasks(int tasks, void (*call)(void*, int), void* context) { pool().run(tasks, call, context); }
}  // namespace detail

}  // namespace accrue::kernels::cpu
