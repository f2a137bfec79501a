#include "shard_plan.hpp"

#include <algorithm>

#include "../core/error.hpp"

namespace accrue::distributed {

ShardPlan::ShardPlan(const BucketPlan& buckets, int ranks) : buckets_(buckets), ranks_(ranks) {
  ACCRUE_CHECK(ranks >= 1, "a shard plan needs at least one rank, got {}", ranks);
  for (const BucketPlan::Bucket& b : buckets.buckets()) {
    bucket_start_.push_back(total_);
    total_ += b.elements;
  }
  // BucketPlan pads every parameter to whole units, so the flat space is whole units too.
  constexpr auto unit = static_cast<std::int64_t>(BucketPlan::kAlignBytes / sizeof(float));
  const std::int64_t units = (total_ + unit - 1) / unit;
  for (std::int64_t r = 0; r <= ranks; ++r) bounds_.push_back(std::min(total_, units * r / ranks * unit));
  for (std::size_t b = 0; b < bucket_start_.size(); ++b) {
    const std::int64_t lo = bucket_start_[b], hi = lo + buckets.buckets()[b].elements;
    std::vector<std::int64_t>& counts = counts_.emplace_back();
    for (int r = 0; r < ranks; ++r) counts.push_back(std::max<std::int64_t>(0, std::min(hi, end(r)) - std::max(lo, begin(r))));
  }
}

std::int64_t ShardPlan::bucket_offset(std::size_t b, int rank) const {
  std::int64_t at = 0;
  for (int r = 0; r < rank; ++r) at += counts_[b][static_cast<std::size_t>(r)];
  return at;
}

std::vector<ShardPlan::Piece> ShardPlan::pieces(int rank) const {
  std::vector<Piece> out;
  const std::int64_t first = begin(rank), last = end(rank);
  for (std::size_t b = 0; b < bucket_start_.size(); ++b) {
    const BucketPlan::Bucket& bucket = buckets_.buckets()[b];
    for (std::size_t k = 0; k < bucket.parameters.size(); ++k) {
      // The parameter's own elements, without the padding after it.
      const std::int64_t at = bucket_start_[b] + bucket.offsets[k];
      const std::int64_t lo = std::max(at, first), hi = std::min(at + bucket.sizes[k], last);
      if (lo < hi)
        out.push_back({.parameter = bucket.parameters[k], .offset = lo - at, .elements = hi - lo, .bucket = b,
                       .bucket_offset = lo - bucket_start_[b]});
    }
  }
  return out;
}

}  // namespace accrue::distributed
