// The communicator under mpirun (ctest runs it with 2 and 3 processes, label mpi) and alone (one
// process, started without mpirun, where every collective is the identity).

#include <accrue/framework/distributed/communicator.hpp>
#include <cstdlib>
#include <cstring>
#include <numeric>

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

// Sharded training's collectives (ZeRO): a reduce-scatter leaves each rank its part summed, with
// the very bits an allreduce gives it (both add in rank order), whatever the parts' sizes, also
// when a rank has none; an allgather gives every rank every part.
BOOST_AUTO_TEST_CASE(reduce_scatter_gives_each_rank_the_bits_allreduce_gives_its_part) {
  const int n = world().size(), r = world().rank();
  const auto me = static_cast<std::size_t>(r);
  const std::int64_t elements = 4099;
  // Uneven parts: the last rank takes the most, and rank 0 none when there are several ranks.
  std::vector<std::int64_t> counts(static_cast<std::size_t>(n), 0);
  std::int64_t given = 0;
  for (int k = 1; k < n; ++k) given += counts[static_cast<std::size_t>(k)] = 37 * k;
  counts.back() += elements - given;
  if (n == 1) counts[0] = elements;
  const Tensor summed = test::random_tensor({elements}, 300 + static_cast<std::uint64_t>(r));
  const Tensor scattered = summed.clone();
  world().allreduce_sum(summed);
  const std::int64_t before = world().stats().tensor_reduce_scatters;
  world().start_reduce_scatter_sum(scattered, counts)->wait();
  BOOST_TEST(world().stats().tensor_reduce_scatters == before + 1);
  std::int64_t begin = 0;
  for (std::size_t k = 0; k < me; ++k) begin += counts[k];
  const std::vector<float> a = summed.to_vector(), b = scattered.to_vector();
  const std::vector<float> own = test::random_tensor({elements}, 300 + static_cast<std::uint64_t>(r)).to_vector();
  for (std::int64_t i = 0; i < elements; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const bool mine = i >= begin && i < begin + counts[me];
    // Bit for bit: the same float, not merely a close one.
    if (mine) BOOST_REQUIRE_EQUAL(std::memcmp(&a[k], &b[k], sizeof(float)), 0);
    else BOOST_REQUIRE_EQUAL(b[k], own[k]);  // the rest is left as it was
  }
  // Each rank's summed part, gathered: every rank then holds the whole allreduced tensor.
  world().start_allgather(scattered, counts)->wait();
  BOOST_TEST(std::memcmp(scattered.data_ptr(), summed.data_ptr(), summed.nbytes()) == 0);
  BOOST_CHECK_EXCEPTION(world().start_reduce_scatter_sum(scattered, std::vector<std::int64_t>(static_cast<std::size_t>(n), 1)),
                        ValueError, message_has({"reduce_scatter_sum", "for a tensor of 4099"}));
}

BOOST_AUTO_TEST_CASE(even_parts_share_aligned_units_and_leave_none_where_too_few) {
  const int n = world().size();
  const std::vector<std::int64_t> parts = world().even_parts(1000, 16);
  BOOST_REQUIRE_EQUAL(parts.size(), static_cast<std::size_t>(n));
  std::int64_t total = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    total += parts[k];
    if (k + 1 < parts.size()) BOOST_TEST(parts[k] % 16 == 0);  // every part but the last starts and ends on a unit
  }
  BOOST_TEST(total == 1000);
  // Two units among three ranks: one rank has no part.
  const std::vector<std::int64_t> few = world().even_parts(20, 16);
  BOOST_TEST(std::accumulate(few.begin(), few.end(), std::int64_t{0}) == 20);
  if (n == 3) BOOST_TEST(few == (std::vector<std::int64_t>{0, 16, 4}), boost::test_tools::per_element());
  // A part of nothing still takes part in the collectives.
  const Tensor small = Tensor::full({20}, static_cast<float>(world().rank() + 1));
  world().start_reduce_scatter_sum(small, few)->wait();
  world().start_allgather(small, few)->wait();
  for (const float v : small.to_vector()) BOOST_REQUIRE_EQUAL(v, static_cast<float>(n * (n + 1) / 2));
}
