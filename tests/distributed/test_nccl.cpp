// The NCCL backend under mpirun (label mpi): one GPU per process, compared with the sums and copies
// the CPU computes. Without a GPU for every process on this machine, each process prints why and
// exits with 77, which ctest reports as skipped.

#include <accrue/framework/distributed/communicator.hpp>
#include <accrue/framework/core/device_query.hpp>
#include <cstdio>

#include "../test_util.hpp"

using namespace accrue;

namespace {

distributed::Communicator& nccl() { return distributed::for_device(Device::cuda(distributed::local_rank())); }

}  // namespace

BOOST_AUTO_TEST_CASE(allreduce_on_gpus_sums_every_rank) {
  const int n = nccl().size(), r = nccl().rank();
  BOOST_TEST(nccl().backend() == (n > 1 ? "nccl" : "single process"));
  std::vector<float> v(4099);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((r + 1) * static_cast<int>(i % 97));
  const Tensor t = Tensor::from(v, {4099}).to(Device::cuda(distributed::local_rank()));
  if (n > 1) nccl().start_allreduce_sum(t)->wait();
  const std::vector<float> got = t.to(Device::cpu()).to_vector();
  for (std::size_t i = 0; i < v.size(); ++i)
    BOOST_REQUIRE_EQUAL(got[i], static_cast<float>(n * (n + 1) / 2 * static_cast<int>(i % 97)));
}

BOOST_AUTO_TEST_CASE(broadcast_on_gpus_copies_rank_0) {
  const Tensor expected = test::random_tensor({3, 7}, 7);
  const Tensor t = (nccl().rank() == 0 ? expected : Tensor::zeros({3, 7})).to(Device::cuda(distributed::local_rank()));
  nccl().broadcast(t, 0);
  test::check_close(t.to(Device::cpu()), expected, 0.0, 0.0, "broadcast");
}

// ncclReduceScatter and ncclAllGather over parts of one size (in place) and of different sizes
// (through the slots of a buffer), as a sharded run's buckets give them: each rank's part holds the
// sum of every rank's, and after the allgather every part is its owner's.
BOOST_AUTO_TEST_CASE(reduce_scatter_and_allgather_on_gpus_over_even_and_uneven_parts) {
  const int n = nccl().size(), r = nccl().rank();
  for (const bool even : {true, false}) {
    BOOST_TEST_CONTEXT((even ? "even parts" : "uneven parts")) {
      std::vector<std::int64_t> counts;
      for (int k = 0; k < n; ++k) counts.push_back(even ? 64 : 16 * (k + 1));
      std::int64_t total = 0, at = 0;
      for (int k = 0; k < n; ++k) {
        if (k < r) at += counts[static_cast<std::size_t>(k)];
        total += counts[static_cast<std::size_t>(k)];
      }
      std::vector<float> v(static_cast<std::size_t>(total));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((r + 1) * static_cast<int>(i % 31));
      const Tensor t = Tensor::from(v, {total}).to(Device::cuda(distributed::local_rank()));
      nccl().start_reduce_scatter_sum(t, counts)->wait();
      std::vector<float> got = t.to(Device::cpu()).to_vector();
      for (std::int64_t i = at; i < at + counts[static_cast<std::size_t>(r)]; ++i)
        BOOST_REQUIRE_EQUAL(got[static_cast<std::size_t>(i)], static_cast<float>(n * (n + 1) / 2 * static_cast<int>(i % 31)));
      // Each rank's part set to its rank + 1, then gathered.
      std::vector<float> mine(static_cast<std::size_t>(total), -1.0f);
      for (std::int64_t i = at; i < at + counts[static_cast<std::size_t>(r)]; ++i) mine[static_cast<std::size_t>(i)] = static_cast<float>(r + 1);
      const Tensor g = Tensor::from(mine, {total}).to(Device::cuda(distributed::local_rank()));
      nccl().start_allgather(g, counts)->wait();
      got = g.to(Device::cpu()).to_vector();
      std::int64_t from = 0;
      for (int k = 0; k < n; ++k)
        for (std::int64_t i = 0; i < counts[static_cast<std::size_t>(k)]; ++i)
          BOOST_REQUIRE_EQUAL(got[static_cast<std::size_t>(from++)], static_cast<float>(k + 1));
    }
  }
}

int main(int argc, char* argv[]) {
  const int processes = distributed::world().size();
  const int devices = Device::cuda_device_count();
  if (devices < processes || devices == 0) {
    std::printf("SKIPPED: test_nccl needs a CUDA device for each of its %d processes on this machine, found %d%s%s\n",
                processes, devices, devices == 0 ? ": " : "",
                devices == 0 ? kernels::cuda_device_count().reason.c_str() : "");
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
