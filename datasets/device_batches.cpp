#include "device_batches.hpp"

#include <array>
#include <chrono>
#include <cstring>

#include "prefetch.hpp"
#include "../framework/runtime/device_runtime.hpp"
#include "../framework/core/log.hpp"

namespace accrue {

namespace {

// Prefetch's copier: pinned staging memory, the copy stream, an event per slot.
class CudaCopier {
 public:
  using Item = Batch;
  explicit CudaCopier(Device device) : device_(device), slots_{Slot{device}, Slot{device}} {}

  Batch start(const Batch& host, int slot) {
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    Batch staged;
    staged.index = host.index;
    staged.samples = host.samples;
    staged.inputs = stage(host.inputs, s.inputs, s.done);
    staged.targets = stage(host.targets, s.targets, s.done);
    return staged;
  }
  void before_compute(int slot) noexcept {
    guarded("ordering compute after a prefetch copy",
            [&] { slots_[static_cast<std::size_t>(slot)].done.wait_on_compute(); });
  }
  void finish(int slot) noexcept {
    guarded("waiting for a prefetch copy", [&] { slots_[static_cast<std::size_t>(slot)].done.synchronize(); });
  }

 private:
  struct Slot {
    explicit Slot(Device device) : done(device) {}
    runtime::PinnedBuffer inputs, targets;
    runtime::Event done;  // recorded after the slot's last copy
  };

  // Starts copying host tensors `host` into new device tensors through `buffer`, one after another.
  std::vector<Tensor> stage(const std::vector<Tensor>& host, runtime::PinnedBuffer& buffer, runtime::Event& done) const {
    std::size_t total = 0;
    for (const Tensor& t : host) total += t.nbytes();
    auto* at = static_cast<char*>(buffer.reserve(total));
    std::vector<Tensor> out;
    for (const Tensor& t : host) {
      std::memcpy(at, t.data_ptr(), t.nbytes());
      out.push_back(Tensor::empty(t.shape(), {.dtype = t.dtype(), .device = device_, .category = MemoryCategory::data}));
      runtime::copy_to_device_async(device_, out.back().data_ptr(), at, t.nbytes(), done);
      at += t.nbytes();
    }
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

DeviceBatches::DeviceBatches(const DataLoader& loader, Device device, BatchQueueOptions queue)
    : loader_(loader), device_(device) {
  const bool in_memory = loader.dataset().in_memory();
  if (!in_memory && resolve_workers(queue.workers) > 0) queue_ = std::make_unique<BatchQueue>(loader, queue);
  // Data already on a device is handed over as it is (moved when on another); only host data is staged.
  if (device.is_cuda() && (!in_memory || loader.dataset().source().tensors()->inputs()[0].device().is_cpu()))
    staging_ = std::make_unique<Staging>(device);
}

DeviceBatches::~DeviceBatches() = default;

void DeviceBatches::reset() {
  if (staging_) staging_->prefetch.drop();
  if (queue_) queue_->reset();
}

Batch DeviceBatches::host(std::int64_t index) { return queue_ ? queue_->get(index) : loader_[index]; }

Batch DeviceBatches::load(std::int64_t index) {
  Batch b = host(index);
  for (std::vector<Tensor>* part : {&b.inputs, &b.targets})
    for (Tensor& t : *part) t = t.to(device_);  // to() keeps what is there already
  return b;
}

Batch DeviceBatches::get(std::int64_t index, std::optional<std::int64_t> next) {
  struct Timed {
    double& total;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~Timed() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
  } timed{waited_};
  if (!staging_) return load(index);
  Prefetch<CudaCopier>& prefetch = staging_->prefetch;
  std::optional<Batch> batch = prefetch.take(index);
  if (!batch) batch = load(index);
  if (next && *next >= 0 && *next < loader_.size()) prefetch.start(host(*next));
  return std::move(*batch);
}

}  // namespace accrue
