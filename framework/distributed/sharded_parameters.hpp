#pragma once
// ZeRO stage 1 (arXiv 1910.02054): each rank steps only its shard of the parameters, so its
// optimizer keeps state for that shard alone. A sharded Reducer leaves each rank the sums of its
// parts of the buckets (reduce-scatter); the pieces of the parameters inside those parts are leaf
// tensors that share the parameters' storage, with those parts as their gradients, and an
// optimizer created over pieces() steps them in place; gather() then gives every rank every
// updated parameter (an allgather per bucket). close_window (framework/training/window_close.hpp)
// drives it: unscale and the inf check on the pieces, agreed by all ranks; the global gradient
// norm in the shard plan's order (the same bits as an unsharded run's, gradient_norm_in_parts);
// clipping; the step; gather().

#include <vector>

#include "../core/non_copyable.hpp"
#include "../core/tensor.hpp"
#include "reducer.hpp"

namespace accrue::distributed {

class ShardedParameters : NonCopyable {
 public:
  /// The pieces of `reducer`'s parameters this rank owns; `reducer` must be sharded
  /// (ReducerOptions::shard) and outlive this.
  explicit ShardedParameters(const Reducer& reducer);

  /// This rank's pieces of the parameters, flat, in the shard plan's order: what its optimizer
  /// steps. Empty for a rank that owns nothing.
  const std::vector<Tensor>& pieces() const { return pieces_; }
  /// Where each of pieces() lies: its parameter, its elements there, its place in the buckets.
  const std::vector<ShardPlan::Piece>& placement() const { return placed_; }
  /// Points each piece's .grad() at its part of the buckets, which the window's reduce-scatter
  /// filled (an optimizer's zero_grad drops them between windows).
  void attach_gradients();
  /// Whether any rank's `mine` is true (inf found in its part of the gradients): one answer on all.
  bool any_rank(bool mine) const;
  /// The L2 norm of the whole summed gradient, from every rank's part: the same bits on every rank,
  /// and the bits gradient_norm_in_parts gives an unsharded run of the same plan.
  double gradient_norm() const;
  /// Every rank's updated pieces into every rank's parameters.
  void gather();
  /// Drops the parameters' own .grad() (views of the buckets, all but this rank's parts stale), so
  /// that the next window's backward writes them afresh: at every window's close, stepped or not.
  void drop_gradients();

 private:
  const Reducer& reducer_;
  std::vector<ShardPlan::Piece> placed_;  // where each piece lies
  std::vector<Tensor> pieces_;
};

/// The L2 norm of the gradients of `reducer`'s parameters (their summed .grad(), after an unsharded
/// finish), added in its shard plan's order: each rank's pieces in order, then the ranks' sums in
/// rank order, in double. Every data-parallel run measures its norm so, so that a sharded run clips
/// by the very same norm.
double gradient_norm_in_parts(const Reducer& reducer);

}  // namespace accrue::distributed
