#include "accrue/datasets/device_batches.hpp"

#include <array>
#include <cstring>

#include "accrue/config.hpp"
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

}  // namespace

struct DeviceBatches::Staging {
  // Two slots: one may still be copying while the other is filled.
  struct Slot {
    explicit Slot(int device) : done(device) {}
    PinnedBuffer inputs, targets;
    kernels::cuda::Event done;
    bool used = false;
  };
  explicit Staging(int device) : slots{Slot{device}, Slot{device}} {}
  std::array<Slot, 2> slots;
  int next_slot = 0;
  std::optional<Batch> pending;  // on the device, its copy in flight
  kernels::cuda::Event* pending_done = nullptr;
};

namespace {
// Starts copying host tensor `host` into a new device tensor through `buffer`.
Tensor stage(const Tensor& host, Device device, void* buffer_memory, kernels::cuda::Event& done) {
  std::memcpy(buffer_memory, host.data_ptr(), host.nbytes());
  Tensor out = Tensor::empty(host.shape(), {.dtype = host.dtype(), .device = device, .category = MemoryCategory::data});
  kernels::cuda::copy_host_to_device_async(device.index(), out.data_ptr(), buffer_memory, host.nbytes(), done);
  return out;
}
}  // namespace
#else
struct DeviceBatches::Staging {};
#endif

DeviceBatches::DeviceBatches(const DataLoader& loader, Device device) : loader_(loader), device_(device) {
#if ACCRUE_WITH_CUDA
  if (device.is_cuda()) staging_ = std::make_unique<Staging>(device.index());
#endif
}

DeviceBatches::~DeviceBatches() = default;

void DeviceBatches::reset() {
#if ACCRUE_WITH_CUDA
  if (staging_) {
    staging_->pending.reset();
    staging_->pending_done = nullptr;
  }
#endif
}

Batch DeviceBatches::get(std::int64_t index, std::optional<std::int64_t> next) {
  if (device_.is_cpu()) return loader_[index];
#if ACCRUE_WITH_CUDA
  Staging& s = *staging_;
  Batch batch;
  if (s.pending && s.pending->index == index) {
    // Kernels that read the batch queue behind its copy.
    s.pending_done->wait_on(kernels::cuda::compute_stream(device_.index()));
    batch = std::move(*s.pending);
  } else {
    const Batch host = loader_[index];
    batch = Batch{host.inputs.to(device_), host.targets.to(device_), host.index};
  }
  s.pending.reset();
  s.pending_done = nullptr;
  if (next && *next >= 0 && *next < loader_.size()) {
    const Batch host = loader_[*next];
    Staging::Slot& slot = s.slots[static_cast<std::size_t>(s.next_slot)];
    s.next_slot ^= 1;
    // The slot's pinned memory may still be the source of its previous copy.
    if (slot.used) slot.done.synchronize();
    slot.used = true;
    void* in = slot.inputs.reserve(host.inputs.nbytes());
    void* tg = slot.targets.reserve(host.targets.nbytes());
    Batch staged;
    staged.index = host.index;
    staged.inputs = stage(host.inputs, device_, in, slot.done);
    staged.targets = stage(host.targets, device_, tg, slot.done);
    s.pending = std::move(staged);
    s.pending_done = &slot.done;
  }
  return batch;
#else
  (void)next;
  throw DeviceError(fmt::format("batches on {}: this build of Accrue has no CUDA backend", device_));
#endif
}

}  // namespace accrue
