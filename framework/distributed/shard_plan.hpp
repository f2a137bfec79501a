#pragma once
// Which part of the parameters each process owns in a sharded run (ZeRO, arXiv 1910.02054): the
// buckets of a BucketPlan laid end to end make one flat space, and each rank owns one contiguous
// range of it, balanced in units of BucketPlan::kAlignBytes (so a shard starts on a cache line in
// every bucket). A bucket's reduce-scatter gives each rank the part of the bucket inside its range
// (bucket_counts), and the parameters a rank steps are the pieces of them inside it (pieces). Like
// BucketPlan it does not depend on the backend and is tested on the CPU.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bucket_plan.hpp"

namespace accrue::distributed {

class ShardPlan {
 public:
  /// A parameter's elements [offset, offset + elements) that one rank owns, and where they lie in
  /// the parameter's bucket.
  struct Piece {
    std::size_t parameter = 0;
    std::int64_t offset = 0, elements = 0;
    std::size_t bucket = 0;
    std::int64_t bucket_offset = 0;
  };

  /// Shards of `buckets` among `ranks` processes, float32 elements.
  ShardPlan(const BucketPlan& buckets, int ranks);

  int ranks() const { return ranks_; }
  /// The flat space: every bucket's elements, padding included.
  std::int64_t elements() const { return total_; }
  /// Rank r's range of the flat space, [begin, end); empty when there are fewer units than ranks.
  std::int64_t begin(int rank) const { return bounds_[static_cast<std::size_t>(rank)]; }
  std::int64_t end(int rank) const { return bounds_[static_cast<std::size_t>(rank) + 1]; }
  /// Each rank's part of bucket b, in rank order: the counts its reduce-scatter and allgather take.
  const std::vector<std::int64_t>& bucket_counts(std::size_t b) const { return counts_[b]; }
  /// Where bucket b starts in the flat space.
  std::int64_t bucket_start(std::size_t b) const { return bucket_start_[b]; }
  /// Where rank r's part of bucket b starts in the bucket.
  std::int64_t bucket_offset(std::size_t b, int rank) const;
  /// The pieces of parameters rank r owns, in the flat space's order (parameters without elements
  /// there are left out).
  std::vector<Piece> pieces(int rank) const;

 private:
  const BucketPlan& buckets_;
  int ranks_;
  std::int64_t total_ = 0;
  std::vector<std::int64_t> bucket_start_;          // each bucket's first element in the flat space
  std::vector<std::int64_t> bounds_;                // ranks + 1 boundaries
  std::vector<std::vector<std::int64_t>> counts_;  // per bucket, per rank
};

}  // namespace accrue::distributed
