// The communicator under mpirun (ctest runs it with 2 and 3 processes, label mpi) and alone (one
// process, started without mpirun, where every collective is the identity).

#include <accrue/framework/distributed/communicator.hpp>
#include <cstdlib>
#include <cstring>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

distributed::Communicator& world() { return distributed::world(); }

// The bits of a float32 tensor, to compare replicas exactly.
std::uint64_t bits_hash(const Tensor& t) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
  for (std::size_t i = 0; i < t.nbytes(); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_world_is_what_the_launcher_started) {
  const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE");
  BOOST_TEST(distributed::launched_by_mpi() == (launched != nullptr));
  BOOST_TEST(world().size() == (launched ? std::atoi(launched) : 1));
  BOOST_TEST(world().rank() >= 0);
  BOOST_TEST(world().rank() < world().size());
  BOOST_TEST(world().backend() == (launched ? "mpi" : "single process"));
  BOOST_TEST_MESSAGE("rank " << world().rank() << " of " << world().size() << " (" << world().backend() << ")");
}

BOOST_AUTO_TEST_CASE(allreduce_sums_every_rank_into_every_rank) {
  const int n = world().size(), r = world().rank();
  // Integers, so the sum is exact whatever the order.
  std::vector<float> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((r + 1) * static_cast<int>(i % 97));
  const Tensor t = Tensor::from(v, {10, 100});
  world().allreduce_sum(t);
  const std::vector<float> got = t.to_vector();
  for (std::size_t i = 0; i < v.size(); ++i)
    BOOST_REQUIRE_EQUAL(got[i], static_cast<float>(n * (n + 1) / 2 * static_cast<int>(i % 97)));
  // Values whose sum rounds: every rank still ends with the same bits.
  const Tensor x = test::random_tensor({4097}, 100 + static_cast<std::uint64_t>(r));
  world().allreduce_sum(x);
  const std::vector<std::int64_t> hashes = world().allgather(static_cast<std::int64_t>(bits_hash(x)));
  for (const std::int64_t h : hashes) BOOST_TEST(h == hashes.front());
  world().allreduce_sum(Tensor::zeros({0}));  // nothing to send is not an error
}

BOOST_AUTO_TEST_CASE(broadcast_copies_the_root_everywhere) {
  const int last = world().size() - 1;
  const Tensor t = world().rank() == last ? test::random_tensor({3, 7}, 7) : Tensor::zeros({3, 7});
  world().broadcast(t, last);
  test::check_close(t, test::random_tensor({3, 7}, 7), 0.0, 0.0, "broadcast");
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{world().rank(), 5}, {2});
  world().broadcast(labels, 0);
  BOOST_TEST(labels.to_vector<std::int32_t>() == (std::vector<std::int32_t>{0, 5}), boost::test_tools::per_element());
  BOOST_CHECK_EXCEPTION(world().broadcast(t, world().size()), ValueError, message_has({"rank", "ranks 0.."}));
}

BOOST_AUTO_TEST_CASE(allgather_lists_the_ranks_in_order) {
  const std::vector<std::int64_t> all = world().allgather(10 * world().rank() + 3);
  BOOST_REQUIRE_EQUAL(all.size(), static_cast<std::size_t>(world().size()));
  for (int i = 0; i < world().size(); ++i) BOOST_TEST(all[static_cast<std::size_t>(i)] == 10 * i + 3);
  world().barrier();
}

BOOST_AUTO_TEST_CASE(a_single_process_communicator_is_the_identity) {
  const auto alone = distributed::single_process();
  BOOST_TEST(alone->size() == 1);
  BOOST_TEST(alone->rank() == 0);
  const Tensor t = test::random_tensor({5}, 3);
  alone->allreduce_sum(t);
  alone->broadcast(t, 0);
  alone->barrier();
  test::check_close(t, test::random_tensor({5}, 3), 0.0, 0.0, "unchanged");
  BOOST_TEST(alone->allgather(42) == (std::vector<std::int64_t>{42}), boost::test_tools::per_element());
  BOOST_CHECK_EXCEPTION(alone->allreduce_sum(Tensor::from(std::vector<std::int32_t>{1}, {1})), ValueError,
                        message_has({"float32"}));
}
