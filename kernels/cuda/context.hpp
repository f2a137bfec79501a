#pragma once
// Per-device state of the CUDA backend. Every kernel, cuBLAS and cuDNN call on a device runs on
// that device's compute stream, in order, so the caching allocator may hand a freed block to the
// next allocation at once (as PyTorch's does); a side stream carries host-to-device copies of the
// next batch while the current one trains, ordered against compute by events.
//
// fmt-free, so .cu files include it. Outside kernels/cuda, framework/device_runtime.hpp wraps it.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>


namespace accrue::kernels::cuda {

struct DeviceContext {
  int device = 0;
  cudaStream_t compute = nullptr;
  cudaStream_t copy = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  /// Recorded on `compute` whenever a copy must follow the compute work queued so far, and waited
  /// for at once: a wait takes the event's state at the call, so one event serves every copy.
  cudaEvent_t compute_marker = nullptr;
  int multiprocessors = 0;
  int compute_capability = 0;  // 80 for sm_80
};

/// The context of `device`, created on first use; makes `device` current on the calling thread.
DeviceContext& context(int device);
/// context(device).compute.
cudaStream_t compute_stream(int device);
/// Waits until all work queued on `device`'s compute stream has finished.
void synchronize(int device);

/// Blocks for grid-stride loops over n elements with `threads` per block: enough to fill the
/// device a few times over, never more than the work needs.
unsigned blocks_for(const DeviceContext& c, long long n, int threads);

void copy_host_to_device(int device, void* dst, const void* src, std::size_t bytes);
void copy_device_to_host(int device, void* dst, const void* src, std::size_t bytes);
void copy_device_to_device(int dst_device, void* dst, int src_device, const void* src, std::size_t bytes);

// ---- device memory behind the caching allocator  ----
/// cudaMalloc on `device`; nullptr when the device is out of memory (other failures throw).
void* device_malloc(int device, std::size_t bytes);
void device_free(int device, void* ptr) noexcept;

// ---- pinned host memory and the copy stream, for prefetching batches ----
void* pinned_malloc(std::size_t bytes);
void pinned_free(void* ptr) noexcept;

/// An event on a device's stream; cheap to create once and record many times.
class Event {
 public:
  explicit Event(int device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t stream);
  /// Makes `stream` wait (on the device) for the work before the last record().
  void wait_on(cudaStream_t stream) const;
  /// Blocks the host until the work before the last record() has finished.
  void synchronize() const;

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

/// Copies host `src` (pinned) to device `dst` on the copy stream, after the compute work queued so
/// far (the block may have been freed by it), and records `done` for the compute stream to wait on.
void copy_host_to_device_async(int device, void* dst, const void* src, std::size_t bytes, Event& done);

}  // namespace accrue::kernels::cuda
