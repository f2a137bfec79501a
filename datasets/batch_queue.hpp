#pragma once
// Batches of a DataLoader read ahead on background threads: samples are read, decoded and
// transformed by a pool of workers, in the CPU time the trainer and other programs leave
// (SCHED_IDLE), into a bounded queue of ready batches. Each worker builds whole batches, in order of index; the queue holds at most `depth`
// batches beyond the one asked for, and their memory is counted as data.
//
// A batch is a pure function of (loader seed, epoch, batch index), so reading ahead, the number of
// workers and a restart at another index change nothing but the time the trainer waits.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "loader.hpp"

namespace accrue {

struct BatchQueueOptions {
  /// Background threads reading samples; 0 reads on the caller's thread. -1: one per core, at most 4.
  int workers = -1;
  /// Ready batches held ahead of the one asked for; 0: two per worker.
  int depth = 0;
};

class BatchQueue {
 public:
  /// Reads from `loader`, which must outlive the queue; its epoch is read at each get().
  BatchQueue(const DataLoader& loader, BatchQueueOptions options = {});
  ~BatchQueue();
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;

  /// Batch `index` of the loader's current epoch. The batches after it are read ahead; asking for
  /// another index than the next (a new epoch, a resume, a replanned epoch) starts again there. A
  /// batch that no worker has begun, or that its worker does not deliver within twice a batch's
  /// usual CPU time, is read on the calling thread. A worker's error (a corrupt file) is thrown
  /// here, for the batch it belongs to.
  Batch get(std::int64_t index);
  /// Drops what was read ahead.
  void reset();

  int workers() const { return static_cast<int>(threads_.size()); }
  int depth() const { return depth_; }
  /// Seconds get() spent waiting for a batch not yet ready.
  double waited_seconds() const { return waited_; }

 private:
  struct Epoch;  // a copy of the loader at the epoch's start, which the workers read
  struct Ready {
    Batch batch;
    std::exception_ptr error;
    double cpu_seconds = 0.0;  // of the thread that read it
  };
  void work();
  void count_cpu(double seconds);
  void restart(std::int64_t index);
  static Ready produce(const DataLoader& loader, std::int64_t index) noexcept;

  const DataLoader& loader_;
  int depth_;
  std::mutex mutex_;
  std::condition_variable wake_workers_, wake_consumer_;
  std::shared_ptr<const Epoch> epoch_;
  std::int64_t next_to_read_ = 0, next_to_take_ = 0, end_ = 0;
  std::map<std::int64_t, Ready> ready_;
  bool stopping_ = false;
  double waited_ = 0.0;
  double batch_cpu_seconds_ = 0.0;  // a moving average over the batches read
  std::vector<std::thread> threads_;
};

/// The number of background threads BatchQueueOptions::workers asks for (-1 resolved).
int resolve_workers(int workers);
/// The most batches a queue with `options` holds besides the one its reader has (0 without workers).
int batches_read_ahead(const BatchQueueOptions& options);

}  // namespace accrue
