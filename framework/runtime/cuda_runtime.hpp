#pragma once
// The CUDA backend's device functions that framework/runtime/device_runtime.cpp calls through
// cuda::backend() (framework/runtime/cuda_backend.hpp): memory, copies, events and waiting. Toolkit-free;
// defined in kernels/cuda/context.cpp, where context.hpp says how the streams are ordered.

#include <cstddef>

namespace accrue::kernels::cuda {

void synchronize(int device);

void copy_host_to_device(int device, void* dst, const void* src, std::size_t bytes);
void copy_device_to_host(int device, void* dst, const void* src, std::size_t bytes);
void copy_device_to_device(int dst_device, void* dst, int src_device, const void* src, std::size_t bytes);

void* device_malloc(int device, std::size_t bytes);
void device_free(int device, void* ptr) noexcept;

void* pinned_malloc(std::size_t bytes);
void pinned_free(void* ptr) noexcept;

/// An event of `device` (a cudaEvent_t behind the pointer), for event_destroy to release.
void* event_create(int device);
void event_destroy(void* event) noexcept;
/// Makes the device's compute stream wait for the work recorded in `event`.
void event_wait_on_compute(void* event, int device);
/// Blocks the host until that work has finished.
void event_synchronize(void* event);

/// Copies pinned host memory to the device on its copy stream, after the compute work queued so
/// far, and records `done` (from event_create) after it.
void copy_host_to_device_async(int device, void* dst, const void* src, std::size_t bytes, void* done);

}  // namespace accrue::kernels::cuda
