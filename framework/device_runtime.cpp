// The one place outside kernels/cuda that reaches the CUDA runtime (through kernels/cuda/context.hpp).

#include "accrue/framework/device_runtime.hpp"

#include "accrue/config.hpp"
#include "accrue/framework/error.hpp"
#if ACCRUE_WITH_CUDA
#include "accrue/kernels/cuda/context.hpp"
#endif

namespace accrue::runtime {

namespace {

[[noreturn]] void no_backend(const char* what, Device device) {
  throw DeviceError(fmt::format("{} on {}: this build of Accrue has no CUDA backend", what, device));
}

}  // namespace

#if ACCRUE_WITH_CUDA

PinnedBuffer::~PinnedBuffer() { release(); }

void* PinnedBuffer::reserve(std::size_t bytes) {
  if (bytes > capacity_) {
    release();
    data_ = kernels::cuda::pinned_malloc(bytes);
    capacity_ = bytes;
  }
  return data_;
}

void PinnedBuffer::release() noexcept {
  if (data_ != nullptr) kernels::cuda::pinned_free(data_);
  data_ = nullptr;
  capacity_ = 0;
}

struct Event::Impl {
  explicit Impl(int index) : event(index), device(index) {}
  kernels::cuda::Event event;
  int device;
};

Event::Event(Device device) {
  if (!device.is_cuda()) throw DeviceError(fmt::format("an event on {}: events order GPU work", device));
  impl_ = std::make_unique<Impl>(device.index());
}

Event::~Event() = default;

void Event::wait_on_compute() const { impl_->event.wait_on(kernels::cuda::compute_stream(impl_->device)); }

void Event::synchronize() const { impl_->event.synchronize(); }

void copy_to_device_async(Device device, void* dst, const void* src, std::size_t bytes, Event& done) {
  kernels::cuda::copy_host_to_device_async(device.index(), dst, src, bytes, done.impl_->event);
}

void* device_malloc(Device device, std::size_t bytes) { return kernels::cuda::device_malloc(device.index(), bytes); }

void device_free(Device device, void* ptr) noexcept { kernels::cuda::device_free(device.index(), ptr); }

void copy(Device dst_device, void* dst, Device src_device, const void* src, std::size_t bytes) {
  if (dst_device.is_cuda() && src_device.is_cpu())
    return kernels::cuda::copy_host_to_device(dst_device.index(), dst, src, bytes);
  if (dst_device.is_cpu() && src_device.is_cuda())
    return kernels::cuda::copy_device_to_host(src_device.index(), dst, src, bytes);
  if (dst_device.is_cuda() && src_device.is_cuda())
    return kernels::cuda::copy_device_to_device(dst_device.index(), dst, src_device.index(), src, bytes);
  throw DeviceError(fmt::format("runtime::copy from {} to {}: host-to-host copies are memcpy", src_device, dst_device));
}

void synchronize(Device device) {
  if (device.is_cuda()) kernels::cuda::synchronize(device.index());
}

#else

PinnedBuffer::~PinnedBuffer() = default;
void* PinnedBuffer::reserve(std::size_t) { no_backend("pinned memory", Device::cpu()); }
void PinnedBuffer::release() noexcept {  // nothing was ever allocated
  data_ = nullptr;
  capacity_ = 0;
}

struct Event::Impl {};
Event::Event(Device device) { no_backend("an event", device); }
Event::~Event() = default;
void Event::wait_on_compute() const {}
void Event::synchronize() const {}

void copy_to_device_async(Device device, void*, const void*, std::size_t, Event&) { no_backend("a copy", device); }
void* device_malloc(Device device, std::size_t) { no_backend("device memory", device); }
void device_free(Device, void*) noexcept {}
void copy(Device dst_device, void*, Device src_device, const void*, std::size_t) {
  no_backend("a copy", dst_device.is_cpu() ? src_device : dst_device);
}
void synchronize(Device) {}

#endif

}  // namespace accrue::runtime
