#pragma once
// The device runtime: what moves data to and from a GPU and orders work there, beside the kernels.
// Each GPU has a compute stream, on which every kernel, cuBLAS and cuDNN call runs in order, and a
// copy stream for host-to-device copies that overlap the compute (see datasets/device_batches.hpp);
// events order one against the other. Pinned host memory makes those copies asynchronous. A
// communicator's stream will live here too. In a build without the CUDA backend every call for a
// GPU throws DeviceError (no GPU device can be made there).

#include <cstddef>
#include <memory>

#include "../core/device.hpp"
#include "../core/non_copyable.hpp"

namespace accrue::runtime {

/// Host memory pinned for copies to a GPU, grown to the largest size asked for.
class PinnedBuffer : NonCopyable {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  /// At least `bytes` of pinned memory; what it held before is gone when it grows.
  void* reserve(std::size_t bytes);

 private:
  void release() noexcept;
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

/// A point in a GPU's work: recorded after some work, waited for by the compute stream or the host.
class Event : NonCopyable {
 public:
  explicit Event(Device device);
  ~Event();
  /// Makes the device's compute stream wait (on the device, not the host) for the recorded work.
  void wait_on_compute() const;
  /// Blocks the host until the recorded work has finished.
  void synchronize() const;

 private:
  friend void copy_to_device_async(Device, void*, const void*, std::size_t, Event&);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Copies pinned host memory `src` to device memory `dst` on the device's copy stream, after the
/// compute work queued so far (the block may have been freed by it), and records `done` after it.
void copy_to_device_async(Device device, void* dst, const void* src, std::size_t bytes, Event& done);

/// Device memory for the caching allocator: nullptr when the device is out of memory (other
/// failures throw).
void* device_malloc(Device device, std::size_t bytes);
void device_free(Device device, void* ptr) noexcept;

/// Copies between host and device memory or two devices' memory, ordered on the compute stream;
/// a copy that ends on the host waits for it.
void copy(Device dst_device, void* dst, Device src_device, const void* src, std::size_t bytes);

/// Waits until the work queued on `device` has finished (nothing to wait for on the CPU).
void synchronize(Device device);

}  // namespace accrue::runtime
