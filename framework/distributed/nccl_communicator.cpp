// The NCCL backend of Communicator: CUDA tensors of a data-parallel run, one GPU per process.
// Rank 0 creates the ncclUniqueId and broadcasts it over the MPI communicator (world()); every
// collective runs on the communicator's own stream, ordered after the work already queued on the
// device's compute stream (the backward pass that filled a bucket) by an event, so that buckets
// travel while backward goes on. Host values, barriers and allgathers go over MPI.

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "communicator.hpp"
#include "../core/error.hpp"
#include "../../kernels/cuda/context.hpp"

namespace accrue::distributed::detail {

namespace {

void check(ncclResult_t result, const char* call, int rank) {
  if (result == ncclSuccess) return;
  throw CommunicationError(fmt::format("rank {}: {} failed: {}", rank, call, ncclGetErrorString(result)));
}

void check(cudaError_t result, const char* call, int rank) {
  if (result == cudaSuccess) return;
  throw CommunicationError(fmt::format("rank {}: {} failed: {}", rank, call, cudaGetErrorString(result)));
}

class Nccl;

// A collective queued on the NCCL stream, between two events.
class NcclWork final : public Work {
 public:
  NcclWork(Nccl& owner, std::string what, std::size_t bytes, cudaEvent_t start, cudaEvent_t done, int sharded,
           Tensor staging = {})
      : owner_(owner), what_(std::move(what)), bytes_(bytes), start_(start), done_(done), sharded_(sharded),
        staging_(std::move(staging)) {}
  ~NcclWork() override;
  void wait() override;

 private:
  Nccl& owner_;
  std::string what_;
  std::size_t bytes_;
  cudaEvent_t start_, done_;
  int sharded_;
  Tensor staging_;  // a buffer the collective uses, kept until it is done
  bool waited_ = false;
};

class Nccl final : public Communicator {
 public:
  Nccl(Communicator& world, int device) : Communicator(world.rank(), world.size()), world_(world), device_(device) {
    ncclUniqueId id;
    std::string bytes;
    if (rank() == 0) {
      check(ncclGetUniqueId(&id), "ncclGetUniqueId", rank());
      bytes.assign(reinterpret_cast<const char*>(&id), sizeof id);
    }
    bytes = world_.broadcast(bytes, 0);
    std::memcpy(&id, bytes.data(), sizeof id);
    kernels::cuda::context(device_);  // makes the device current
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", rank());
    check(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank", rank());
  }
  ~Nccl() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  std::string_view backend() const override { return "nccl"; }

  std::unique_ptr<Work> start_allreduce_sum(const Tensor& t) override {
    require_here(t, "allreduce_sum");
    ACCRUE_CHECK(t.dtype() == DType::f32, "allreduce_sum: expects float32, got {}", dtype_name(t.dtype()));
    t.bump_version();
    return queue("allreduce_sum (ncclAllReduce)", t.nbytes(), [&] {
      check(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<std::size_t>(t.numel()), ncclFloat, ncclSum, comm_,
                          stream_),
            "ncclAllReduce", rank());
    });
  }

  // ncclReduceScatter and ncclAllGather take parts of one size: equal parts in place, parts of
  // different sizes (a bucket the shards cut unevenly) through a buffer of one slot per rank, each
  // the size of the largest part, the padding zero. NCCL's ring adds in an order of its own, so the
  // sums may differ from ncclAllReduce's in the last bits.
  std::unique_ptr<Work> start_reduce_scatter_sum(const Tensor& t, std::span<const std::int64_t> counts) override {
    return sharded_collective(t, counts, true);
  }
  std::unique_ptr<Work> start_allgather(const Tensor& t, std::span<const std::int64_t> counts) override {
    return sharded_collective(t, counts, false);
  }

  void broadcast(const Tensor& t, int root) override {
    if (t.device().is_cpu()) return world_.broadcast(t, root);
    ACCRUE_CHECK(root >= 0 && root < size(), "broadcast from rank {}: the run has ranks 0..{}", root, size() - 1);
    require_here(t, "broadcast");
    t.bump_version();
    queue("broadcast (ncclBroadcast)", 0, [&] {
      check(ncclBroadcast(t.data_ptr(), t.data_ptr(), t.nbytes(), ncclUint8, root, comm_, stream_), "ncclBroadcast",
            rank());
    })->wait();
  }
  void barrier() override { world_.barrier(); }
  void allreduce_sum(std::span<double> values) override { world_.allreduce_sum(values); }
  std::vector<std::int64_t> allgather(std::int64_t value) override { return world_.allgather(value); }

  void stop_all() override {
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    world_.stop_all();
  }

  // The watchdog: a collective whose peers never come would block for ever in a host wait, so the
  // host polls its event and aborts the communicator after the timeout.
  void wait_for(cudaEvent_t done, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const cudaError_t state = cudaEventQuery(done);
      if (state == cudaSuccess) return;
      if (state != cudaErrorNotReady) check(state, "cudaEventQuery", rank());
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_seconds()) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        throw CommunicationError(fmt::format("rank {}: {} did not finish within {} s; another process of the run has "
                                             "stopped, hangs, or called a different collective",
                                             rank(), what, timeout_seconds()));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void count(std::size_t bytes, float milliseconds, int sharded) {
    if (sharded != 0) return count_sharded(sharded > 0, bytes, milliseconds / 1000.0);
    if (bytes == 0) {
      ++stats_.other_calls;
      return;
    }
    ++stats_.tensor_allreduces;
    stats_.tensor_allreduce_bytes += static_cast<std::int64_t>(bytes);
    stats_.tensor_allreduce_seconds += milliseconds / 1000.0;
  }

 private:
  void require_here(const Tensor& t, const char* call) const {
    ACCRUE_CHECK(t.device() == Device::cuda(device_), "{}: this process's NCCL communicator reduces tensors on cuda:{}, "
                 "got one on {}", call, device_, t.device());
  }

  std::unique_ptr<Work> sharded_collective(const Tensor& t, std::span<const std::int64_t> counts, bool reduce) {
    const char* what = reduce ? "reduce_scatter_sum (ncclReduceScatter)" : "allgather (ncclAllGather)";
    require_here(t, what);
    ACCRUE_CHECK(t.dtype() == DType::f32, "{}: expects float32, got {}", what, dtype_name(t.dtype()));
    require_parts(t, counts, what);
    t.bump_version();
    const auto slot = static_cast<std::size_t>(*std::max_element(counts.begin(), counts.end()));
    const bool even = std::all_of(counts.begin(), counts.end(), [&](std::int64_t n) { return static_cast<std::size_t>(n) == slot; });
    const auto me = static_cast<std::size_t>(rank());
    // In place when even, else through the slots of `staging`.
    Tensor staging = even ? Tensor{} : Tensor::zeros({static_cast<std::int64_t>(slot) * size()},
                                                     {.device = t.device(), .category = MemoryCategory::temporaries});
    auto* data = static_cast<float*>(t.data_ptr());
    auto* slots = even ? data : static_cast<float*>(staging.data_ptr());
    std::vector<std::size_t> at{0};
    for (const std::int64_t n : counts) at.push_back(at.back() + static_cast<std::size_t>(n));
    const auto copy = [&](float* to, const float* from, std::size_t n) {
      if (n > 0) check(cudaMemcpyAsync(to, from, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync", rank());
    };
    return queue(what, t.nbytes(), [&] {
      if (slot == 0) return;
      if (reduce) {
        if (!even)
          for (std::size_t r = 0; r < counts.size(); ++r) copy(slots + r * slot, data + at[r], at[r + 1] - at[r]);
        check(ncclReduceScatter(slots, slots + me * slot, slot, ncclFloat, ncclSum, comm_, stream_), "ncclReduceScatter", rank());
        if (!even) copy(data + at[me], slots + me * slot, at[me + 1] - at[me]);
      } else {
        if (!even) copy(slots + me * slot, data + at[me], at[me + 1] - at[me]);
        check(ncclAllGather(slots + me * slot, slots, slot, ncclFloat, comm_, stream_), "ncclAllGather", rank());
        if (!even)
          for (std::size_t r = 0; r < counts.size(); ++r) copy(data + at[r], slots + r * slot, at[r + 1] - at[r]);
      }
    }, reduce ? 1 : -1, std::move(staging));
  }

  // Queues `enqueue` on the NCCL stream after the compute stream's work so far; `sharded` says
  // what the statistics count it as (1 reduce-scatter, -1 allgather, 0 otherwise).
  template <typename F>
  std::unique_ptr<Work> queue(std::string what, std::size_t bytes, F&& enqueue, int sharded = 0, Tensor staging = {}) {
    ACCRUE_CHECK(comm_ != nullptr, "rank {}: the NCCL communicator was aborted after an earlier failure", rank());
    cudaEvent_t ready = nullptr, start = nullptr, done = nullptr;
    check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate", rank());
    check(cudaEventCreate(&start), "cudaEventCreate", rank());
    check(cudaEventCreate(&done), "cudaEventCreate", rank());
    check(cudaEventRecord(ready, kernels::cuda::compute_stream(device_)), "cudaEventRecord", rank());
    check(cudaStreamWaitEvent(stream_, ready, 0), "cudaStreamWaitEvent", rank());
    cudaEventDestroy(ready);  // released once recorded work completes
    check(cudaEventRecord(start, stream_), "cudaEventRecord", rank());
    enqueue();
    check(cudaEventRecord(done, stream_), "cudaEventRecord", rank());
    return std::make_unique<NcclWork>(*this, std::move(what), bytes, start, done, sharded, std::move(staging));
  }

  Communicator& world_;
  int device_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

NcclWork::~NcclWork() {
  // The buffer may not be freed while the collective still writes it.
  if (!waited_) cudaEventSynchronize(done_);
  cudaEventDestroy(start_);
  cudaEventDestroy(done_);
}

void NcclWork::wait() {
  if (waited_) return;
  owner_.wait_for(done_, what_);
  waited_ = true;
  float milliseconds = 0;
  cudaEventElapsedTime(&milliseconds, start_, done_);
  owner_.count(bytes_, milliseconds, sharded_);
}

}  // namespace

std::unique_ptr<Communicator> make_nccl(Communicator& world, int device) {
  return std::make_unique<Nccl>(world, device);
}

}  // namespace accrue::distributed::detail
