#include "communicator.hpp"

#include <algorithm>
#include <exception>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include <accrue/config.hpp>
#include "../core/error.hpp"
#include "../runtime/cuda_backend.hpp"

namespace accrue::distributed {

namespace detail {
#if ACCRUE_WITH_NCCL
// An NCCL communicator of world's processes on `device` (nccl_communicator.cpp, in the CUDA
// backend's library).
std::unique_ptr<Communicator> make_nccl(Communicator& world, int device);
#endif
#if ACCRUE_WITH_MPI
// Starts MPI (mpi_communicator.cpp).
std::unique_ptr<Communicator> make_mpi_world();
#endif
}  // namespace detail

namespace {

class Done final : public Work {
 public:
  void wait() override {}
};

class SingleProcess final : public Communicator {
 public:
  SingleProcess() : Communicator(0, 1) {}
  std::string_view backend() const override { return "single process"; }
  std::unique_ptr<Work> start_allreduce_sum(const Tensor& t) override {
    require_float32_cpu(t);
    ++stats_.tensor_allreduces;
    stats_.tensor_allreduce_bytes += static_cast<std::int64_t>(t.nbytes());
    return std::make_unique<Done>();
  }
  std::unique_ptr<Work> start_reduce_scatter_sum(const Tensor& t, std::span<const std::int64_t> counts) override {
    require_float32_cpu(t);
    require_parts(t, counts, "reduce_scatter_sum");
    count_sharded(true, t.nbytes(), 0.0);
    return std::make_unique<Done>();
  }
  std::unique_ptr<Work> start_allgather(const Tensor& t, std::span<const std::int64_t> counts) override {
    require_float32_cpu(t);
    require_parts(t, counts, "allgather");
    count_sharded(false, t.nbytes(), 0.0);
    return std::make_unique<Done>();
  }
  void broadcast(const Tensor&, int root) override {
    ACCRUE_CHECK(root == 0, "broadcast from rank {}: the run has ranks 0..0 (one process)", root);
  }
  void allreduce_sum(std::span<double>) override {}
  void barrier() override {}
  std::vector<std::int64_t> allgather(std::int64_t value) override { return {value}; }
};

}  // namespace

void Communicator::require_float32_cpu(const Tensor& t) {
  ACCRUE_CHECK(t.dtype() == DType::f32 && t.device().is_cpu(), "allreduce_sum: expects a float32 CPU tensor, got {} on {}",
               dtype_name(t.dtype()), t.device());
}

void Communicator::require_parts(const Tensor& t, std::span<const std::int64_t> counts, const char* call) const {
  ACCRUE_CHECK(counts.size() == static_cast<std::size_t>(size()), "{}: {} part counts for {} ranks", call, counts.size(),
               size());
  std::int64_t total = 0;
  for (const std::int64_t c : counts) {
    ACCRUE_CHECK(c >= 0, "{}: a part of {} elements", call, c);
    total += c;
  }
  ACCRUE_CHECK(total == t.numel(), "{}: parts of {} elements in all, for a tensor of {}", call, total, t.numel());
}

void Communicator::count_sharded(bool reduce_scatter, std::size_t bytes, double seconds) {
  (reduce_scatter ? stats_.tensor_reduce_scatters : stats_.tensor_allgathers) += 1;
  (reduce_scatter ? stats_.tensor_reduce_scatter_bytes : stats_.tensor_allgather_bytes) += static_cast<std::int64_t>(bytes);
  stats_.tensor_allreduce_seconds += seconds;
}

std::vector<std::int64_t> Communicator::even_parts(std::int64_t elements, std::int64_t align) const {
  ACCRUE_CHECK(elements >= 0 && align >= 1, "even_parts({}, {}): needs elements >= 0 and align >= 1", elements, align);
  const std::int64_t units = (elements + align - 1) / align, n = size();
  std::vector<std::int64_t> counts;
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t begin = std::min(elements, units * r / n * align), end = std::min(elements, units * (r + 1) / n * align);
    counts.push_back(end - begin);
  }
  return counts;
}

std::string Communicator::broadcast(const std::string& text, int root) {
  const std::vector<std::int64_t> lengths = allgather(static_cast<std::int64_t>(text.size()));
  ACCRUE_CHECK(root >= 0 && root < size(), "broadcast from rank {}: the run has ranks 0..{}", root, size() - 1);
  const std::int64_t length = lengths[static_cast<std::size_t>(root)];
  // Bytes carried in int32 elements (tensors have no byte dtype).
  const Tensor words = Tensor::zeros({(length + 3) / 4}, {.dtype = DType::i32});
  if (rank() == root) std::memcpy(words.data_ptr(), text.data(), text.size());
  broadcast(words, root);
  return {static_cast<const char*>(words.data_ptr()), static_cast<std::size_t>(length)};
}

void Communicator::abort(std::string_view message) {
  std::fprintf(stderr, "rank %d of %d: %.*s\n", rank(), size(), static_cast<int>(message.size()), message.data());
  if (size() > 1) std::fprintf(stderr, "rank %d: stopping all %d processes of the run\n", rank(), size());
  std::fflush(stderr);
  stop_all();
  std::_Exit(1);
}

void Communicator::set_timeout_seconds(double seconds) {
  ACCRUE_CHECK(seconds > 0, "set_timeout_seconds({}): the watchdog's limit must be positive", seconds);
  timeout_seconds_ = seconds;
}

bool launched_by_mpi() {
  // Open MPI's launcher sets OMPI_COMM_WORLD_SIZE; MPICH's and the PMI ones PMI_SIZE.
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

std::unique_ptr<Communicator> single_process() { return std::make_unique<SingleProcess>(); }

namespace {

Communicator* started_world = nullptr;

// An exception that escapes main under mpirun: its message with the rank, then every process ends.
[[noreturn]] void terminate_run() {
  std::string message = "std::terminate was called without an exception";
  if (const std::exception_ptr e = std::current_exception()) try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      message = fmt::format("uncaught exception: {}", x.what());
    } catch (...) {
      message = "uncaught exception of a type that is not std::exception";
    }
  started_world->abort(message);
}

}  // namespace

Communicator& world() {
  static const std::unique_ptr<Communicator> world = [] {
    if (!launched_by_mpi()) return single_process();
#if ACCRUE_WITH_MPI
    return detail::make_mpi_world();
#else
    throw CommunicationError(
        "this process was started by mpirun, but this build of Accrue has no MPI backend (configured without "
        "Open MPI: install libopenmpi-dev and openmpi-bin, then configure again)");
#endif
  }();
  // Registered after the static above: at exit it runs before the world is destroyed (finalized).
  static const bool hooked = [] {
    if (world->size() == 1) return false;
    started_world = world.get();
    std::set_terminate(terminate_run);
    ::on_exit([](int status, void*) { started_world->exiting(status); }, nullptr);
    return true;
  }();
  (void)hooked;
  return *world;
}

Communicator& for_device(Device device) {
  Communicator& all = world();
  if (device.is_cpu() || all.size() == 1) return all;
#if ACCRUE_WITH_NCCL
  // One per GPU, made on first use by every rank in the same order, as collectives are.
  static std::map<int, std::unique_ptr<Communicator>> nccl;
  std::unique_ptr<Communicator>& c = nccl[device.index()];
  if (!c) {
    const auto make_nccl = reinterpret_cast<decltype(&detail::make_nccl)>(kernels::cuda::backend_function("make_nccl"));
    c = make_nccl(all, device.index());
  }
  return *c;
#else
  throw NotSupported(fmt::format("data-parallel training of tensors on {} needs the NCCL backend, which this build of "
                                 "Accrue lacks (configured without CUDA, MPI or NCCL); train on the CPU",
                                 device));
#endif
}

int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"})
    if (const char* env = std::getenv(name)) return std::max(0, std::atoi(env));
  return 0;
}

}  // namespace accrue::distributed
