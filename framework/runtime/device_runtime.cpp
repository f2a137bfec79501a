// The device runtime over the CUDA backend's library, loaded at first use (framework/runtime/cuda_backend.hpp).

#include "device_runtime.hpp"

#include "../core/error.hpp"
#include "cuda_backend.hpp"
#include "cuda_runtime.hpp"

namespace accrue::runtime {

// ACCRUE_CUDA throws DeviceError, saying why, where the backend is not there: the first GPU
// allocation, copy or event finds out.

PinnedBuffer::~PinnedBuffer() { release(); }

void* PinnedBuffer::reserve(std::size_t bytes) {
  if (bytes > capacity_) {
    release();
    data_ = ACCRUE_CUDA(pinned_malloc)(bytes);
    capacity_ = bytes;
  }
  return data_;
}

void PinnedBuffer::release() noexcept {
  if (data_ != nullptr) ACCRUE_CUDA(pinned_free)(data_);
  data_ = nullptr;
  capacity_ = 0;
}

struct Event::Impl {
  explicit Impl(int index) : event(ACCRUE_CUDA(event_create)(index)), device(index) {}
  ~Impl() { ACCRUE_CUDA(event_destroy)(event); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  void* event;
  int device;
};

Event::Event(Device device) {
  if (!device.is_cuda()) throw DeviceError(fmt::format("an event on {}: events order GPU work", device));
  impl_ = std::make_unique<Impl>(device.index());
}

Event::~Event() = default;

void Event::wait_on_compute() const { ACCRUE_CUDA(event_wait_on_compute)(impl_->event, impl_->device); }

void Event::synchronize() const { ACCRUE_CUDA(event_synchronize)(impl_->event); }

void copy_to_device_async(Device device, void* dst, const void* src, std::size_t bytes, Event& done) {
  ACCRUE_CUDA(copy_host_to_device_async)(device.index(), dst, src, bytes, done.impl_->event);
}

void* device_malloc(Device device, std::size_t bytes) { return ACCRUE_CUDA(device_malloc)(device.index(), bytes); }

void device_free(Device device, void* ptr) noexcept { ACCRUE_CUDA(device_free)(device.index(), ptr); }

void copy(Device dst_device, void* dst, Device src_device, const void* src, std::size_t bytes) {
  if (dst_device.is_cuda() && src_device.is_cpu())
    return ACCRUE_CUDA(copy_host_to_device)(dst_device.index(), dst, src, bytes);
  if (dst_device.is_cpu() && src_device.is_cuda())
    return ACCRUE_CUDA(copy_device_to_host)(src_device.index(), dst, src, bytes);
  if (dst_device.is_cuda() && src_device.is_cuda())
    return ACCRUE_CUDA(copy_device_to_device)(dst_device.index(), dst, src_device.index(), src, bytes);
  throw DeviceError(fmt::format("runtime::copy from {} to {}: host-to-host copies are memcpy", src_device, dst_device));
}

void synchronize(Device device) {
  if (device.is_cuda()) ACCRUE_CUDA(synchronize)(device.index());
}

}  // namespace accrue::runtime
