// ShardPlan: which part of the parameters each rank owns in a sharded run, on the CPU alone.

#include <accrue/framework/distributed/shard_plan.hpp>

#include <numeric>

#include "../test_util.hpp"

using namespace accrue;
using distributed::BucketPlan;
using distributed::ShardPlan;

namespace {

// Every element of every parameter, owned by exactly one rank, at the place its bucket has it.
void check_covered(const BucketPlan& buckets, const std::vector<std::int64_t>& sizes, const ShardPlan& plan) {
  std::vector<std::vector<int>> owner(sizes.size());
  for (std::size_t p = 0; p < sizes.size(); ++p) owner[p].assign(static_cast<std::size_t>(sizes[p]), -1);
  for (int r = 0; r < plan.ranks(); ++r)
    for (const ShardPlan::Piece& piece : plan.pieces(r)) {
      const std::size_t p = piece.parameter;
      BOOST_TEST(piece.bucket == buckets.bucket_of(p));
      BOOST_TEST(piece.bucket_offset == buckets.buckets()[piece.bucket].offsets[buckets.slot_of(p)] + piece.offset);
      // Inside the rank's part of the bucket.
      const std::int64_t first = plan.bucket_offset(piece.bucket, r);
      BOOST_TEST(piece.bucket_offset >= first);
      BOOST_TEST(piece.bucket_offset + piece.elements <= first + plan.bucket_counts(piece.bucket)[static_cast<std::size_t>(r)]);
      for (std::int64_t i = piece.offset; i < piece.offset + piece.elements; ++i) {
        BOOST_REQUIRE_EQUAL(owner[p][static_cast<std::size_t>(i)], -1);
        owner[p][static_cast<std::size_t>(i)] = r;
      }
    }
  for (std::size_t p = 0; p < sizes.size(); ++p)
    for (const int r : owner[p]) BOOST_REQUIRE_GE(r, 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(ranks_own_contiguous_aligned_ranges_that_cover_every_parameter_once) {
  const std::vector<std::int64_t> sizes{10, 300, 5, 5, 20, 1000, 7};
  const BucketPlan buckets{sizes, 4, 2000};
  for (const int ranks : {1, 2, 3, 4, 7}) {
    const ShardPlan plan{buckets, ranks};
    BOOST_TEST_CONTEXT("ranks " << ranks) {
      std::int64_t flat = 0;
      for (const auto& b : buckets.buckets()) flat += b.elements;
      BOOST_TEST(plan.elements() == flat);
      BOOST_TEST(plan.begin(0) == 0);
      BOOST_TEST(plan.end(ranks - 1) == flat);
      for (int r = 0; r < ranks; ++r) {
        BOOST_TEST(plan.begin(r) % 16 == 0);  // a cache line
        if (r > 0) BOOST_TEST(plan.begin(r) == plan.end(r - 1));
        // Balanced to a unit of 16 elements.
        BOOST_TEST(std::abs((plan.end(r) - plan.begin(r)) - flat / ranks) <= 16);
      }
      for (std::size_t b = 0; b < buckets.buckets().size(); ++b) {
        const std::vector<std::int64_t>& counts = plan.bucket_counts(b);
        BOOST_TEST(std::accumulate(counts.begin(), counts.end(), std::int64_t{0}) == buckets.buckets()[b].elements);
      }
      check_covered(buckets, sizes, plan);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_rank_owns_nothing_when_there_are_fewer_units_than_ranks) {
  // One parameter of 20 elements: two units of 16, so of three ranks one owns nothing.
  const std::vector<std::int64_t> sizes{20};
  const BucketPlan buckets{sizes, 4, 1000};
  const ShardPlan plan{buckets, 3};
  BOOST_TEST(plan.begin(0) == plan.end(0));
  BOOST_TEST(plan.pieces(0).empty());
  BOOST_TEST(plan.bucket_counts(0) == (std::vector<std::int64_t>{0, 16, 16}), boost::test_tools::per_element());
  // The last rank's piece is the parameter's last 4 elements; the padding after them is no one's parameter.
  const std::vector<ShardPlan::Piece> last = plan.pieces(2);
  BOOST_REQUIRE_EQUAL(last.size(), 1u);
  BOOST_TEST(last[0].offset == 16);
  BOOST_TEST(last[0].elements == 4);
  check_covered(buckets, sizes, plan);
  BOOST_CHECK_THROW(ShardPlan(buckets, 0), ValueError);
}
