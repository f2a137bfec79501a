#include "context.hpp"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "check.hpp"

namespace accrue::kernels::cuda {
namespace {

constexpr int max_devices = 64;

// Contexts live until the process ends and are never destroyed: at exit the CUDA runtime may
// already be unloading, and destroying handles then fails; the driver reclaims everything anyway.
// Read without the lock on every launch; written once per device under it.
std::array<std::atomic<DeviceContext*>, max_devices> contexts{};
std::mutex contexts_mutex;

// Makes `device` current unless it already is: cudaGetDevice reads the thread's state, while
// cudaSetDevice goes into the driver even when nothing changes.
void make_current(int device) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return;
  ACCRUE_CUDA_CHECK(cudaSetDevice(device));
}

DeviceContext* create_context(int device) {
  auto c = std::make_unique<DeviceContext>();
  c->device = device;
  ACCRUE_CUDA_CHECK(cudaSetDevice(device));
  ACCRUE_CUDA_CHECK(cudaStreamCreateWithFlags(&c->compute, cudaStreamNonBlocking));
  ACCRUE_CUDA_CHECK(cudaStreamCreateWithFlags(&c->copy, cudaStreamNonBlocking));
  ACCRUE_CUDA_CHECK(cublasCreate(&c->cublas));
  ACCRUE_CUDA_CHECK(cublasSetStream(c->cublas, c->compute));
  // float32 GEMMs stay float32 (no TF32), as in PyTorch's default; half types use tensor cores.
  ACCRUE_CUDA_CHECK(cublasSetMathMode(c->cublas, CUBLAS_DEFAULT_MATH));
  ACCRUE_CUDA_CHECK(cudnnCreate(&c->cudnn));
  ACCRUE_CUDA_CHECK(cudnnSetStream(c->cudnn, c->compute));
  ACCRUE_CUDA_CHECK(cudaEventCreateWithFlags(&c->compute_marker, cudaEventDisableTiming));
  ACCRUE_CUDA_CHECK(cudaDeviceGetAttribute(&c->multiprocessors, cudaDevAttrMultiProcessorCount, device));
  int major = 0, minor = 0;
  ACCRUE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  ACCRUE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  c->compute_capability = major * 10 + minor;
  return c.release();
}

}  // namespace

DeviceContext& context(int device) {
  if (device < 0 || device >= max_devices) throw_error(cudaErrorInvalidDevice, "context(device)", __FILE__, __LINE__);
  std::atomic<DeviceContext*>& slot = contexts[static_cast<std::size_t>(device)];
  DeviceContext* c = slot.load(std::memory_order_acquire);
  if (c == nullptr) {
    std::lock_guard lock{contexts_mutex};
    c = slot.load(std::memory_order_relaxed);
    if (c == nullptr) {
      c = create_context(device);
      slot.store(c, std::memory_order_release);
    }
  }
  make_current(device);  // for the runtime calls that follow
  return *c;
}

cudaStream_t compute_stream(int device) { return context(device).compute; }

void synchronize(int device) { ACCRUE_CUDA_CHECK(cudaStreamSynchronize(compute_stream(device))); }

unsigned blocks_for(const DeviceContext& c, long long n, int threads) {
  const long long needed = (n + threads - 1) / threads;
  const long long cap = static_cast<long long>(c.multiprocessors) * 8;
  const long long blocks = needed < cap ? needed : cap;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

void copy_host_to_device(int device, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  // From pageable memory the call returns once `src` is staged, so the caller may reuse it.
  ACCRUE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, compute_stream(device)));
}

void copy_device_to_host(int device, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t stream = compute_stream(device);
  ACCRUE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  ACCRUE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void copy_device_to_device(int dst_device, void* dst, int src_device, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == src_device) {
    ACCRUE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute_stream(dst_device)));
    return;
  }
  // Between GPUs: rare (moving a model), so simply ordered by waiting for both devices.
  synchronize(src_device);
  synchronize(dst_device);
  ACCRUE_CUDA_CHECK(cudaMemcpyPeer(dst, dst_device, src, src_device, bytes));
  make_current(dst_device);
  ACCRUE_CUDA_CHECK(cudaDeviceSynchronize());
}

void* device_malloc(int device, std::size_t bytes) {
  context(device);
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear the sticky-until-read error so later checks do not see it
    return nullptr;
  }
  check(status, "cudaMalloc(&ptr, bytes)", __FILE__, __LINE__);
  return ptr;
}

void device_free(int device, void* ptr) noexcept {
  // Errors are ignored: at process exit the runtime may be gone, and a free cannot be retried.
  if (cudaSetDevice(device) == cudaSuccess) (void)cudaFree(ptr);
}

void* pinned_malloc(std::size_t bytes) {
  void* ptr = nullptr;
  ACCRUE_CUDA_CHECK(cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault));
  return ptr;
}

void pinned_free(void* ptr) noexcept { (void)cudaFreeHost(ptr); }

void* event_create(int device) {
  context(device);
  cudaEvent_t event = nullptr;
  ACCRUE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void event_destroy(void* event) noexcept {
  if (event != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

void event_wait_on_compute(void* event, int device) {
  ACCRUE_CUDA_CHECK(cudaStreamWaitEvent(compute_stream(device), static_cast<cudaEvent_t>(event), 0));
}

void event_synchronize(void* event) { ACCRUE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event))); }

void copy_host_to_device_async(int device, void* dst, const void* src, std::size_t bytes, void* done) {
  DeviceContext& c = context(device);
  // The destination block may have been freed by work still queued on the compute stream. Threads
  // staging at once may each wait on the other's later record: a wait for more work, never less.
  ACCRUE_CUDA_CHECK(cudaEventRecord(c.compute_marker, c.compute));
  ACCRUE_CUDA_CHECK(cudaStreamWaitEvent(c.copy, c.compute_marker, 0));
  ACCRUE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c.copy));
  ACCRUE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(done), c.copy));
}

}  // namespace accrue::kernels::cuda
