#pragma once
// Per-device state of the CUDA backend. Every kernel, cuBLAS and cuDNN call on a device runs on
// that device's compute stream, in order, so the caching allocator may hand a freed block to the
// next allocation at once (as PyTorch's does); a side stream carries host-to-device copies of the
// next batch while the current one trains, ordered against compute by events.
//
// fmt-free, so .cu files include it. Outside kernels/cuda, framework/runtime/device_runtime.hpp wraps runtime.hpp
// through cuda::backend().

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>

#include "../../framework/runtime/cuda_runtime.hpp"


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

/// Blocks for grid-stride loops over n elements with `threads` per block: enough to fill the
/// device a few times over, never more than the work needs.
unsigned blocks_for(const DeviceContext& c, long long n, int threads);

// Copies, device and pinned memory, events: framework/runtime/cuda_runtime.hpp.

}  // namespace accrue::kernels::cuda
