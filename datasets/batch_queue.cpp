#include "accrue/datasets/batch_queue.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "accrue/framework/autograd.hpp"

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

BatchQueue::Ready BatchQueue::produce(const DataLoader& loader, std::int64_t index) noexcept {
  try {
    // On this thread alone: the kernels' thread pool belongs to the trainer.
    const NoGradGuard no_grad;
    const std::vector<std::int64_t> indices = loader.sample_indices(index);
    Example e = detail::read_samples(loader.dataset().source(), indices, loader.context(), false);
    return {Batch{std::move(e.inputs), std::move(e.targets), index}, nullptr};
  } catch (...) {
    return {{}, std::current_exception()};
  }
}

void BatchQueue::work() {
  // Below the trainer's threads: reading ahead fills the gaps the training leaves on the cores
  // rather than preempting a kernel's thread and delaying every thread that waits for it.
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
    if (epoch == epoch_) {  // not restarted meanwhile
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
    wake_consumer_.wait(lock, [&] { return ready_.contains(index); });
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
