#include "accrue/datasets/device_batches.hpp"

#include <array>
#include <cstring>

#include "accrue/config.hpp"
#include "accrue/datasets/prefetch.hpp"
#include "accrue/framework/log.hpp"
#if ACCRUE_WITH_CUDA
#include "accrue/kernels/cuda/context.hpp"
#endif

namespace accrue {

#if ACCRUE_WITH_CUDA
namespace {

// A pinned host buffer that grows to the largest batch seen.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { release(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* reserve(std::size_t bytes) {
    if (bytes > capacity_) {
      release();
      data_ = kernels::cuda::pinned_malloc(bytes);
      capacity_ = bytes;
    }
    return data_;
  }

 private:
  void release() {
    if (data_ != nullptr) kernels::cuda::pinned_free(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// Prefetch's copier: pinned staging memory, the copy stream, an event per slot.
class CudaCopier {
 public:
  using Item = Batch;
  explicit CudaCopier(Device device) : device_(device), slots_{Slot{device.index()}, Slot{device.index()}} {}

  Batch start(const Batch& host, int slot) {
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    Batch staged;
    staged.index = host.index;
    staged.inputs = stage(host.inputs, s.inputs.reserve(host.inputs.nbytes()), s.done);
    staged.targets = stage(host.targets, s.targets.reserve(host.targets.nbytes()), s.done);
    return staged;
  }
  void before_compute(int slot) noexcept {
    guarded("ordering compute after a prefetch copy",
            [&] { slots_[static_cast<std::size_t>(slot)].done.wait_on(kernels::cuda::compute_stream(device_.index())); });
  }
  void finish(int slot) noexcept {
    guarded("waiting for a prefetch copy", [&] { slots_[static_cast<std::size_t>(slot)].done.synchronize(); });
  }

 private:
  struct Slot {
    explicit Slot(int device) : done(device) {}
    PinnedBuffer inputs, targets;
    kernels::cuda::Event done;  // recorded after the slot's last copy
  };

  // Starts copying host tensor `host` into a new device tensor through `buffer`.
  Tensor stage(const Tensor& host, void* buffer, kernels::cuda::Event& done) const {
    std::memcpy(buffer, host.data_ptr(), host.nbytes());
    Tensor out = Tensor::empty(host.shape(), {.dtype = host.dtype(), .device = device_, .category = MemoryCategory::data});
    kernels::cuda::copy_host_to_device_async(device_.index(), out.data_ptr(), buffer, host.nbytes(), done);
    return out;
  }
  // A CUDA error here leaves the device unusable; it is said, since these run in destructors too.
  template <class F>
  void guarded(const char* what, F&& f) const noexcept {
    try {
      f();
    } catch (const std::exception& e) {
      log::error("{} on {}: {}", what, device_.str(), e.what());
    }
  }

  Device device_;
  std::array<Slot, 2> slots_;
};

}  // namespace

struct DeviceBatches::Staging {
  explicit Staging(Device device) : prefetch(device) {}
  Prefetch<CudaCopier> prefetch;
};
#else
struct DeviceBatches::Staging {};
#endif

DeviceBatches::DeviceBatches(const DataLoader& loader, Device device) : loader_(loader), device_(device) {
#if ACCRUE_WITH_CUDA
  // Data already on a device is handed over as it is (moved when on another); only host data is staged.
  if (device.is_cuda() && loader.dataset().inputs().device().is_cpu()) staging_ = std::make_unique<Staging>(device);
#endif
}

DeviceBatches::~DeviceBatches() = default;

void DeviceBatches::reset() {
#if ACCRUE_WITH_CUDA
  if (staging_) staging_->prefetch.drop();
#endif
}

Batch DeviceBatches::load(std::int64_t index) const {
  const Batch b = loader_[index];
  return Batch{b.inputs.to(device_), b.targets.to(device_), b.index};  // to() keeps what is there already
}

Batch DeviceBatches::get(std::int64_t index, std::optional<std::int64_t> next) {
  if (!staging_) return load(index);
#if ACCRUE_WITH_CUDA
  Prefetch<CudaCopier>& prefetch = staging_->prefetch;
  std::optional<Batch> batch = prefetch.take(index);
  if (!batch) batch = load(index);
  if (next && *next >= 0 && *next < loader_.size()) prefetch.start(loader_[*next]);
  return std::move(*batch);
#else
  (void)next;
  throw DeviceError(fmt::format("batches on {}: this build of Accrue has no CUDA backend", device_));
#endif
}

}  // namespace accrue
