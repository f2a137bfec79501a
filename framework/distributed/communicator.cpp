#include "accrue/framework/distributed/communicator.hpp"

#include <cstdlib>

#include "accrue/config.hpp"
#include "accrue/framework/error.hpp"

namespace accrue::distributed {

#if ACCRUE_WITH_MPI
namespace detail {
// Starts MPI (mpi_communicator.cpp).
std::unique_ptr<Communicator> make_mpi_world();
}  // namespace detail
#endif

namespace {

class SingleProcess final : public Communicator {
 public:
  SingleProcess() : Communicator(0, 1) {}
  std::string_view backend() const override { return "single process"; }
  void allreduce_sum(const Tensor& t) override { require_float32_cpu(t); }
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

bool launched_by_mpi() {
  // Open MPI's launcher sets OMPI_COMM_WORLD_SIZE; MPICH's and the PMI ones PMI_SIZE.
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

std::unique_ptr<Communicator> single_process() { return std::make_unique<SingleProcess>(); }

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
  return *world;
}

}  // namespace accrue::distributed
