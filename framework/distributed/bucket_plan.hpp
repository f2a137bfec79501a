#pragma once
// Which parameters share a bucket of a data-parallel run's gradient reduction (BucketPlan), and
// which buckets may start during a backward pass (BucketReadiness). Neither depends on the
// backend; both are tested on the CPU.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace accrue::distributed {

/// Which parameters share a bucket: parameters in reverse order (backward completes the last
/// layers' gradients first), a new bucket whenever the next parameter would take the bucket past
/// `bucket_bytes`; a parameter larger than that has a bucket of its own.
class BucketPlan {
 public:
  /// Each parameter starts on a 64-byte boundary of its bucket, a cache line on the CPU (the
  /// padding between them stays zero): the GEMMs that add a micro-batch's weight gradient into
  /// its place read and write whole lines, instead of two lines for every vector.
  static constexpr std::size_t kAlignBytes = 64;

  struct Bucket {
    std::vector<std::size_t> parameters;  // indices, in the bucket's order
    std::vector<std::int64_t> offsets;    // each one's first element in the bucket
    std::vector<std::int64_t> sizes;      // each one's elements, the padding after it left out
    std::int64_t elements = 0;
  };
  BucketPlan(std::span<const std::int64_t> parameter_elements, std::size_t element_bytes, std::size_t bucket_bytes);
  const std::vector<Bucket>& buckets() const { return buckets_; }
  /// The bucket of parameter `p`, and its place in it.
  std::size_t bucket_of(std::size_t p) const { return place_[p].first; }
  std::size_t slot_of(std::size_t p) const { return place_[p].second; }

 private:
  std::vector<Bucket> buckets_;
  std::vector<std::pair<std::size_t, std::size_t>> place_;
};

/// The buckets of one backward pass that may start: a bucket starts once all its parameters are
/// ready and every bucket before it has started, so that every rank starts the same collectives in
/// the same order whatever order its backward completes them in.
class BucketReadiness {
 public:
  explicit BucketReadiness(const BucketPlan& plan);
  /// Marks parameter `p` ready (again: no effect) and returns the buckets that may start now, in
  /// order.
  std::vector<std::size_t> mark_ready(std::size_t p);
  bool is_ready(std::size_t p) const { return ready_[p]; }
  /// The next pass: nothing ready, nothing started.
  void reset();

 private:
  std::vector<std::size_t> advance();
  const BucketPlan& plan_;
  std::vector<bool> ready_;
  std::vector<std::size_t> missing_;  // per bucket: parameters not ready yet
  std::size_t next_ = 0;              // the first bucket that may not start yet
};

}  // namespace accrue::distributed
