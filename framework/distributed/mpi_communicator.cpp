// The MPI backend of Communicator (built when CMake finds MPI). Errors are returned, not fatal
// (MPI_ERRORS_RETURN), so a failed collective becomes a CommunicationError naming the rank.

#include <mpi.h>

#include <limits>
#include <string>

#include "accrue/framework/distributed/communicator.hpp"
#include "accrue/framework/error.hpp"

namespace accrue::distributed::detail {

namespace {

void check(int code, const char* call, int rank) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw CommunicationError(fmt::format("rank {}: {} failed: {}", rank, call, std::string(text, static_cast<std::size_t>(length))));
}

class Mpi final : public Communicator {
 public:
  Mpi(int rank, int size) : Communicator(rank, size) {}
  ~Mpi() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  std::string_view backend() const override { return "mpi"; }

  // Reduced on rank 0 and broadcast from it, so every rank holds the same bits (an allreduce may
  // add in a different order on each rank, and the replicas would drift apart).
  void allreduce_sum(const Tensor& t) override {
    require_float32_cpu(t);
    ACCRUE_CHECK(t.numel() <= std::numeric_limits<int>::max(), "allreduce_sum: {} elements exceed one MPI call",
                 t.numel());
    if (t.numel() == 0) return;
    t.bump_version();
    const int n = static_cast<int>(t.numel());
    float* data = t.data<float>();
    check(MPI_Reduce(rank() == 0 ? MPI_IN_PLACE : data, data, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD),
          "MPI_Reduce (allreduce_sum)", rank());
    check(MPI_Bcast(data, n, MPI_FLOAT, 0, MPI_COMM_WORLD), "MPI_Bcast (allreduce_sum)", rank());
  }

  void allreduce_sum(std::span<double> values) override {
    ACCRUE_CHECK(values.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
                 "allreduce_sum: {} values exceed one MPI call", values.size());
    if (values.empty()) return;
    const int n = static_cast<int>(values.size());
    check(MPI_Reduce(rank() == 0 ? MPI_IN_PLACE : values.data(), values.data(), n, MPI_DOUBLE, MPI_SUM, 0,
                     MPI_COMM_WORLD),
          "MPI_Reduce (allreduce_sum)", rank());
    check(MPI_Bcast(values.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast (allreduce_sum)", rank());
  }

  void broadcast(const Tensor& t, int root) override {
    ACCRUE_CHECK(root >= 0 && root < size(), "broadcast from rank {}: the run has ranks 0..{}", root, size() - 1);
    ACCRUE_CHECK(t.device().is_cpu(), "broadcast: expects a CPU tensor, got one on {}", t.device());
    ACCRUE_CHECK(t.nbytes() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
                 "broadcast: {} bytes exceed one MPI call", t.nbytes());
    if (t.nbytes() == 0) return;
    t.bump_version();
    check(MPI_Bcast(t.data_ptr(), static_cast<int>(t.nbytes()), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast", rank());
  }

  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", rank()); }

  std::vector<std::int64_t> allgather(std::int64_t value) override {
    std::vector<std::int64_t> all(static_cast<std::size_t>(size()));
    check(MPI_Allgather(&value, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, MPI_COMM_WORLD), "MPI_Allgather", rank());
    return all;
  }
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_world() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the thread that trains calls MPI.
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread", -1);
  }
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", -1);
  int rank = 0, size = 1;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank", -1);
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size", rank);
  return std::make_unique<Mpi>(rank, size);
}

}  // namespace accrue::distributed::detail
