#pragma once
// The gradient reduction of a data-parallel window, in buckets that start while backward goes on
// (as PyTorch DDP's Reducer does). The parameters' gradients are views into the buckets, so the
// window's micro-batches accumulate there and communicate nothing; during the backward pass of the
// window's last micro-batch a bucket starts its allreduce as soon as all its gradients are
// complete, while backward works on the layers before it. finish() starts the rest and waits: the
// sums are then in every .grad().
//
// The bucket logic (BucketPlan, BucketReadiness) does not depend on the backend and is tested on
// the CPU; only the Communicator moves the bytes.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "../autograd/autograd.hpp"
#include "../core/non_copyable.hpp"
#include "communicator.hpp"

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

struct ReducerOptions {
  /// Bucket size; PyTorch DDP's default is 25 MiB.
  std::size_t bucket_bytes = 25u << 20;
  /// false: every bucket starts at finish(), after backward (for measuring what the overlap gains).
  bool overlap = true;
};

/// What a reducer's windows cost this rank.
struct ReducerStats {
  std::int64_t windows = 0;
  std::int64_t buckets_started = 0;
  std::int64_t buckets_started_during_backward = 0;
  /// Time the training thread waited in finish() for reductions to complete: the part of the
  /// communication that backward did not hide.
  double waited_seconds = 0;
};

/// Watch the backward pass of a window's last micro-batch with ObserveLeafGradients{reducer}: each
/// parameter's gradient then goes into its bucket when backward completes it, and full buckets
/// start. Then finish().
class Reducer final : public LeafGradientObserver, NonCopyable {
 public:
  /// Buckets for `parameters` (float32, on one device), on `communicator`.
  /// Points each parameter's gradient place into its bucket (Tensor::set_grad_place): the first
  /// backward of a window writes the gradients there, later ones add to them, and nothing is
  /// zeroed, copied in or out. A gradient set otherwise is copied in when ready.
  Reducer(Communicator& communicator, std::vector<Tensor> parameters, ReducerOptions options = {});
  /// Gives the parameters their own gradient storage again.
  ~Reducer() override;

  /// At the window's end: starts the buckets not started yet (a parameter without a gradient adds
  /// zeros), waits for all, and leaves every rank's summed gradient in each .grad(). Also agrees on
  /// `skip_window` through the last bucket: returns true on every rank when any rank skips.
  bool finish(bool skip_window);

  /// What a rank may ask of every rank at a window's end. Like the skip flag, requests travel in the
  /// last bucket: set them before finish(); after it, agreed() holds each one raised on every rank
  /// when any rank raised it. So a signal that reached one rank, or a clock that says a checkpoint
  /// is due on one rank, acts on all ranks at the same window.
  struct Requests {
    bool stop = false;
    bool checkpoint = false;
  };
  void request(Requests mine) { requested_ = mine; }
  Requests agreed() const { return agreed_; }

  const BucketPlan& plan() const { return plan_; }
  /// The bucket buffers' bytes on this rank.
  std::size_t buffer_bytes() const;
  const ReducerStats& stats() const { return stats_; }

  void on_leaf_gradient_ready(const detail::TensorImpl& leaf) override;

 private:
  // Parameter p's place in its bucket's buffer, and whether its .grad() is that place.
  Tensor slot(std::size_t p) const;
  bool in_bucket(std::size_t p) const;
  void copy_in(std::size_t p);
  void start(std::size_t bucket);

  Communicator& communicator_;
  std::vector<Tensor> parameters_;
  ReducerOptions options_;
  BucketPlan plan_;
  BucketReadiness readiness_;
  std::unordered_map<const detail::TensorImpl*, std::size_t> index_;
  std::vector<Tensor> buffers_;  // one flat float32 tensor per bucket; the last has kFlags more elements
  std::vector<std::unique_ptr<Work>> started_;  // buckets 0, 1, ... that started this window
  ReducerStats stats_;
  Requests requested_, agreed_;
};

}  // namespace accrue::distributed
