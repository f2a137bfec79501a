#include "batch_queue.hpp"

#include <sys/resource.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "../framework/autograd/autograd.hpp"
#include "../kernels/cpu/parallel.hpp"

namespace accrue {

struct BatchQueue::Epoch {
  DataLoader loader;
};

int resolve_workers(int workers) {
  if (workers >= 0) return workers;
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
}

int batches_read_ahead(const BatchQueueOptions& options) {
  const int workers = resolve_workers(options.workers);
  if (workers == 0) return 0;
  return options.depth > 0 ? options.depth : std::max(2, 2 * workers);
}

BatchQueue::BatchQueue(const DataLoader& loader, BatchQueueOptions options) : loader_(loader) {
  const int workers = resolve_workers(options.workers);
  depth_ = std::max(1, batches_read_ahead(options));
  for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
}

BatchQueue::~BatchQueue() {
  {
    const std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  wake_workers_.notify_all();
  for (std::thread& t : threads_) t.join();
}

namespace {
double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace

BatchQueue::Ready BatchQueue::produce(const DataLoader& loader, std::int64_t index) noexcept {
  const double start = thread_cpu_seconds();
  try {
    // On this thread alone: the kernels' thread pool belongs to the trainer.
    const NoGradGuard no_grad;
    std::vector<std::int64_t> indices = loader.sample_indices(index);
    Example e = detail::read_samples(loader.dataset().source(), indices, loader.context(), false);
    return {Batch{std::move(e.inputs), std::move(e.targets), index, std::move(indices)}, nullptr,
            thread_cpu_seconds() - start};
  } catch (...) {
    return {{}, std::current_exception(), thread_cpu_seconds() - start};
  }
}

void BatchQueue::count_cpu(double seconds) {
  batch_cpu_seconds_ = batch_cpu_seconds_ == 0.0 ? seconds : 0.8 * batch_cpu_seconds_ + 0.2 * seconds;
}

void BatchQueue::work() {
  // Only in the CPU time nothing else wants (SCHED_IDLE, else nice 10): a worker that preempted a
  // kernel's thread would delay every thread of the kernel waiting for it. When the trainer runs
  // out of batches it waits, its kernel threads rest, and the workers have the cores; if other
  // programs keep the cores busy, the trainer reads its batches itself (get()).
  const sched_param none{};
  if (::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &none) != 0)
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
  std::unique_lock lock{mutex_};
  for (;;) {
    wake_workers_.wait(lock, [&] { return stopping_ || (epoch_ && next_to_read_ < std::min(end_, next_to_take_ + depth_)); });
    if (stopping_) return;
    const std::shared_ptr<const Epoch> epoch = epoch_;
    const std::int64_t index = next_to_read_++;
    lock.unlock();
    Ready ready = produce(epoch->loader, index);
    lock.lock();
    count_cpu(ready.cpu_seconds);
    if (epoch == epoch_ && index >= next_to_take_) {  // not restarted, nor read by the trainer meanwhile
      ready_.emplace(index, std::move(ready));
      wake_consumer_.notify_all();
    }
  }
}

void BatchQueue::restart(std::int64_t index) {
  {
    const std::lock_guard lock{mutex_};
    epoch_ = std::make_shared<const Epoch>(Epoch{loader_});
    ready_.clear();
    next_to_read_ = next_to_take_ = index;
    end_ = loader_.size();
  }
  wake_workers_.notify_all();
}

void BatchQueue::reset() {
  const std::lock_guard lock{mutex_};
  epoch_.reset();
  ready_.clear();
}

Batch BatchQueue::get(std::int64_t index) {
  if (threads_.empty()) return loader_[index];
  bool fresh;
  {
    const std::lock_guard lock{mutex_};
    fresh = !epoch_ || epoch_->loader.epoch() != loader_.epoch() || index != next_to_take_;
  }
  if (fresh) restart(index);
  std::unique_lock lock{mutex_};
  if (!ready_.contains(index)) {
    const auto start = std::chrono::steady_clock::now();
    const kernels::cpu::RestingWorkers resting;
    // A worker reading this batch gets the cores now, and twice its usual CPU time to deliver it.
    // A batch no worker has begun, or one whose worker does not deliver in that time (other
    // programs keep the cores busy and a SCHED_IDLE worker gets none), the trainer reads itself.
    const auto grace = std::chrono::duration<double>(batch_cpu_seconds_ > 0.0 ? 2.0 * batch_cpu_seconds_ + 1e-3 : 0.02);
    if (next_to_read_ == index) ++next_to_read_;
    else wake_consumer_.wait_for(lock, grace, [&] { return ready_.contains(index); });
    if (!ready_.contains(index)) {
      const std::shared_ptr<const Epoch> epoch = epoch_;
      lock.unlock();
      Ready own = produce(epoch->loader, index);
      lock.lock();
      count_cpu(own.cpu_seconds);
      ready_.insert_or_assign(index, std::move(own));
    }
    waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  auto node = ready_.extract(index);
  next_to_take_ = index + 1;
  lock.unlock();
  wake_workers_.notify_all();
  if (node.mapped().error) std::rethrow_exception(node.mapped().error);
  return std::move(node.mapped().batch);
}

}  // namespace accrue
