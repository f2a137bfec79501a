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
#include "bucket_plan.hpp"
#include "communicator.hpp"
#include "shard_plan.hpp"

namespace accrue::distributed {

struct ReducerOptions {
  /// Bucket size; PyTorch DDP's default is 25 MiB.
  std::size_t bucket_bytes = 25u << 20;
  /// false: every bucket starts at finish(), after backward (for measuring what the overlap gains).
  bool overlap = true;
  /// Each rank keeps only its part of each bucket's sum (a reduce-scatter per bucket, the parts of
  /// shard_plan()), for an optimizer that steps that part alone (ShardedParameters, ZeRO stage 1).
  bool shard = false;
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
  /// zeros), waits for all, and leaves every rank's summed gradient in each .grad() (sharded: only
  /// this rank's part of each bucket holds its sum; the parameters' .grad() are then not to be
  /// read). Also agrees on `skip_window` through the last bucket (sharded: a call of its own):
  /// returns true on every rank when any rank skips.
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
  /// Each rank's part of the buckets (reduced there when sharding; the order of the gradient
  /// norm's sum in every data-parallel run, see ShardedParameters::gradient_norm).
  const ShardPlan& shard_plan() const { return shards_; }
  /// The bucket buffers, flat float32, in the plan's order.
  const std::vector<Tensor>& buffers() const { return buffers_; }
  Communicator& communicator() const { return communicator_; }
  const std::vector<Tensor>& parameters() const { return parameters_; }
  bool sharded() const { return options_.shard; }
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
  ShardPlan shards_;
  std::unordered_map<const detail::TensorImpl*, std::size_t> index_;
  std::vector<Tensor> buffers_;  // one flat float32 tensor per bucket; unsharded, the last has kFlags more elements
  Tensor flags_;                 // sharded: the flags, allreduced on their own
  std::vector<std::unique_ptr<Work>> started_;  // buckets 0, 1, ... that started this window
  ReducerStats stats_;
  Requests requested_, agreed_;
};

}  // namespace accrue::distributed
