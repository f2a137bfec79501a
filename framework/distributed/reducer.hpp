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
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../autograd/autograd.hpp"
#include "../core/non_copyable.hpp"
#include "bucket_plan.hpp"
#include "communicator.hpp"
#include "shard_plan.hpp"

namespace accrue::distributed {

/// What a reducer leaves each rank at a window's close (ZeRO's stages, arXiv 1910.02054).
enum class Sharding {
  /// The whole sum on every rank (an allreduce per bucket), in buckets kept for the run that the
  /// gradients are views of (PyTorch DDP).
  none,
  /// Stage 1: each rank the sum of its parts of the buckets (a reduce-scatter per bucket), for an
  /// optimizer that steps that part alone (ShardedParameters); the buckets are kept for the run.
  optimizer_state,
  /// Stage 2, reduced once per window: the window's gradients accumulate in the parameters' own
  /// .grad(); its last backward moves them into buckets made then, which are reduce-scattered and
  /// freed, this rank's parts kept in part(). Between windows a rank holds its part alone.
  gradients_at_window_close,
  /// Stage 2, reduced every micro-batch: each backward's gradients go into buckets that are
  /// reduce-scattered (end_micro_batch(), or finish() for the window's last) and freed, this
  /// rank's parts added into part(). Whole gradients live only during a backward pass, for K
  /// times the traffic of a window of K micro-batches.
  gradients_each_micro_batch,
};

/// "none", "optimizer state", "gradients at the window's close", "gradients each micro-batch".
std::string_view sharding_name(Sharding s);

struct ReducerOptions {
  /// Bucket size; PyTorch DDP's default is 25 MiB.
  std::size_t bucket_bytes = 25u << 20;
  /// false: every bucket starts at finish(), after backward (for measuring what the overlap gains).
  bool overlap = true;
  /// Each rank's parts of the sums are those of shard_plan().
  Sharding sharding = Sharding::none;
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
  /// After a micro-batch that does not close its window, on every rank (whether it trained the
  /// micro-batch or not): with Sharding::gradients_each_micro_batch its gradients are
  /// reduce-scattered and this rank's parts added into part(); otherwise nothing.
  void end_micro_batch();
  /// Before each backward pass (StepModes): with Sharding::gradients_at_window_close, the window's
  /// buckets are made when it begins and the gradients pointed into them; otherwise nothing.
  void begin_backward();

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
  /// The bucket buffers, flat float32, in the plan's order (with stage 2 undefined outside a
  /// backward pass).
  const std::vector<Tensor>& buffers() const { return buffers_; }
  /// This rank's summed part of bucket b after finish() (sharded).
  Tensor owned_part(std::size_t b) const;
  /// Stage 2: frees this rank's part of the sums once the window's step has read it (the next
  /// window makes it again).
  void release_part();
  Communicator& communicator() const { return communicator_; }
  const std::vector<Tensor>& parameters() const { return parameters_; }
  bool sharded() const { return options_.sharding != Sharding::none; }
  /// The parameters' device, where the buckets are.
  Device device() const;
  /// Stage 2: whole gradients only during a window (or a backward pass), this rank's part kept.
  bool shards_gradients() const {
    return options_.sharding == Sharding::gradients_at_window_close ||
           options_.sharding == Sharding::gradients_each_micro_batch;
  }
  /// Whether every backward pass is observed and reduced, not only a window's last.
  bool reduces_each_micro_batch() const { return options_.sharding == Sharding::gradients_each_micro_batch; }
  /// The gradient bytes this rank holds now: the buckets (and flags), or with stage 2 those made
  /// for this window or pass, its part of the sums and the flags.
  std::size_t buffer_bytes() const;
  const ReducerStats& stats() const { return stats_; }

  void on_leaf_gradient_ready(const detail::TensorImpl& leaf) override;
  void before_first_gradient(detail::TensorImpl& leaf) override;

 private:
  // Parameter p's place in its bucket's buffer, and whether its .grad() is that place.
  Tensor slot(std::size_t p) const;
  bool in_bucket(std::size_t p) const;
  void copy_in(std::size_t p);
  void start(std::size_t bucket);
  // Starts the buckets not started yet (a parameter without a gradient adds zeros), in order.
  void start_rest();
  // Waits for started_[started]; the time waited goes on the stats.
  void wait(std::size_t started);
  // Waits for everything started and not kept yet, keeps the rest of the parts (stage 2); the
  // next pass starts afresh.
  void end_pass();
  std::int64_t bucket_elements(std::size_t b) const;
  // Stage 2: bucket b made (zeros) unless it is, and its parameters' gradients pointed into it.
  void make_bucket(std::size_t b);
  // Stage 2: this rank's part of summed bucket b into part_ (the window's first pass copies, later
  // ones add), and the bucket freed.
  void keep_part(std::size_t b);

  Communicator& communicator_;
  std::vector<Tensor> parameters_;
  ReducerOptions options_;
  BucketPlan plan_;
  BucketReadiness readiness_;
  ShardPlan shards_;
  std::unordered_map<const detail::TensorImpl*, std::size_t> index_;
  std::vector<Tensor> buffers_;  // one flat float32 tensor per bucket; unsharded, the last has kFlags more elements
  Tensor flags_;                 // sharded: the flags, allreduced on their own
  Tensor part_;                  // stage 2: this rank's range of the flat space, summed (from a window's first reduction to its step)
  std::size_t kept_ = 0;         // stage 2: buckets of this pass already kept and freed
  std::int64_t window_passes_ = 0;  // passes reduced in this window (stage 2: part_ holds their sum)
  std::vector<std::unique_ptr<Work>> started_;  // buckets 0, 1, ... that started this window
  ReducerStats stats_;
  Requests requested_, agreed_;
};

}  // namespace accrue::distributed
