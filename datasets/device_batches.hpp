#pragma once
// Batches of a DataLoader delivered on the device that trains. On the CPU that is the loader's
// batch itself. On a GPU, while batch i trains, batch i + 1 is gathered on the host, staged in
// pinned memory and copied on a side stream, so the copy overlaps the compute; the compute
// stream waits for that copy when it needs the batch, or before the batch is dropped (see
// prefetch.hpp for the order). A dataset already on a device is handed over without staging.
// A dataset not in memory (read from files, or transformed) is read ahead on background threads
// (batch_queue.hpp) on every device.

#include <cstdint>
#include <memory>
#include <optional>

#include "batch_queue.hpp"
#include "loader.hpp"

namespace accrue {

class DeviceBatches {
 public:
  DeviceBatches(const DataLoader& loader, Device device, BatchQueueOptions queue = {});
  ~DeviceBatches();
  DeviceBatches(const DeviceBatches&) = delete;
  DeviceBatches& operator=(const DeviceBatches&) = delete;

  /// Batch `index` of the loader's current epoch on the device. With `next`, starts moving that
  /// batch as well, to be asked for by the following call.
  Batch get(std::int64_t index, std::optional<std::int64_t> next = std::nullopt);
  /// Drops a prefetched batch (the loader moved to another epoch).
  void reset();

  Device device() const { return device_; }
  /// Seconds get() has spent so far before it could return: reading the batch, or waiting for the
  /// background threads to have it ready.
  double waited_seconds() const { return waited_; }
  /// Whether batches are read on background threads.
  bool reads_ahead() const { return queue_ != nullptr; }

 private:
  struct Staging;
  // Batch `index` of the loader on the host, from the queue when there is one.
  Batch host(std::int64_t index);
  // Batch `index` of the loader, moved to the device without staging.
  Batch load(std::int64_t index);
  const DataLoader& loader_;
  Device device_;
  std::unique_ptr<BatchQueue> queue_;  // data not in memory
  std::unique_ptr<Staging> staging_;   // GPU only
  double waited_ = 0.0;
};

}  // namespace accrue
