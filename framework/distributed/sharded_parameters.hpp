#pragma once
// ZeRO stages 1 and 2 (arXiv 1910.02054): each rank steps only its shard of the parameters, so
// its optimizer keeps state for that shard alone. A sharded Reducer leaves each rank the sums of
// its parts of the buckets (reduce-scatter; Reducer::owned_part, in the buckets with stage 1, in
// the reducer's part with stage 2); the pieces of the parameters inside those parts are leaf
// tensors that share the parameters' storage, with those parts as their gradients, and an
// optimizer created over pieces() steps them in place; gather() then gives every rank every
// updated parameter (an allgather per bucket). close_window (framework/training/window_close.hpp)
// drives it: unscale and the inf check on the pieces, agreed by all ranks; the global gradient
// norm in the shard plan's order (the same bits as an unsharded run's, gradient_norm_in_parts);
// clipping; the step; gather().

#include <memory>
#include <vector>

#include "../core/non_copyable.hpp"
#include "../core/tensor.hpp"
#include "reducer.hpp"

namespace accrue::distributed {

class ShardedParameters : NonCopyable {
 public:
  /// The pieces of `reducer`'s parameters this rank owns; `reducer` must be sharded
  /// (ReducerOptions::shard) and outlive this.
  explicit ShardedParameters(Reducer& reducer);

  /// This rank's pieces of the parameters, flat, in the shard plan's order: what its optimizer
  /// steps. Empty for a rank that owns nothing.
  const std::vector<Tensor>& pieces() const { return pieces_; }
  /// Points each piece's .grad() at its part of the sums, which the window's reduce-scatter
  /// filled (an optimizer's zero_grad drops them between windows).
  void attach_gradients();
  /// Whether any rank's `mine` is true (inf found in its part of the gradients): one answer on all.
  bool any_rank(bool mine) const;
  /// The L2 norm of the whole summed gradient, from every rank's part: the same bits on every rank,
  /// and the bits gradient_norm_in_parts gives an unsharded run of the same plan.
  double gradient_norm() const;
  /// Every rank's updated pieces into every rank's parameters (with stage 2 one bucket at a time,
  /// through a buffer of its layout made for the gather, a temporary).
  void gather();
  /// Drops the parameters' own .grad() (views of the buckets, all but this rank's parts stale), so
  /// that the next window's backward writes them afresh, and the pieces' (with stage 2 the
  /// reducer's part then goes): at every window's close, stepped or not.
  void drop_gradients();

 private:
  std::unique_ptr<Work> start_gather(std::size_t bucket, const Tensor& buffer) const;
  void take_gathered(std::size_t bucket, const Tensor& buffer) const;
  Reducer& reducer_;
  std::vector<ShardPlan::Piece> placed_;  // where each piece lies
  std::vector<Tensor> pieces_;
};

/// The L2 norm of the gradients of `reducer`'s parameters (their summed .grad(), after an unsharded
/// finish), added in its shard plan's order: each rank's pieces in order, then the ranks' sums in
/// rank order, in double. Every data-parallel run measures its norm so, so that a sharded run clips
/// by the very same norm.
double gradient_norm_in_parts(const Reducer& reducer);

}  // namespace accrue::distributed
