#include "sharded_parameters.hpp"

#include <cmath>

#include "../autograd/autograd.hpp"
#include "../core/error.hpp"
#include "../../kernels/elementwise.hpp"
#include "../../kernels/reduce.hpp"

namespace accrue::distributed {
namespace {

// A flat view of elements [offset, offset + elements) of `t`, outside autograd.
Tensor flat_part(const Tensor& t, std::int64_t offset, std::int64_t elements) {
  return t.detach().view_as_shape(Shape{t.numel()}).narrow(offset, offset + elements);
}

// The pieces' sums of squares, added in order, in double.
double sum_of_squares(const std::vector<Tensor>& gradients) { return kernels::sum_of_squares(gradients); }

// The ranks' sums added in rank order.
double in_rank_order(const std::vector<double>& sums) {
  double total = 0.0;
  for (const double s : sums) total += s;
  return std::sqrt(total);
}

}  // namespace

ShardedParameters::ShardedParameters(Reducer& reducer)
    : reducer_(reducer), placed_(reducer.shard_plan().pieces(reducer.communicator().rank())) {
  ACCRUE_CHECK(reducer.sharded(), "ShardedParameters needs a reducer that reduce-scatters (ReducerOptions::sharding)");
  const NoGradGuard no_grad;
  for (const ShardPlan::Piece& p : placed_) {
    Tensor piece = flat_part(reducer.parameters()[p.parameter], p.offset, p.elements);
    piece.set_requires_grad(true);
    pieces_.push_back(std::move(piece));
  }
}

void ShardedParameters::attach_gradients() {
  const int rank = reducer_.communicator().rank();
  for (std::size_t k = 0; k < pieces_.size(); ++k) {
    const ShardPlan::Piece& p = placed_[k];
    const std::int64_t at = p.bucket_offset - reducer_.shard_plan().bucket_offset(p.bucket, rank);
    pieces_[k].set_grad(reducer_.owned_part(p.bucket).narrow(at, at + p.elements));
  }
}

bool ShardedParameters::any_rank(bool mine) const {
  double found[1] = {mine ? 1.0 : 0.0};
  reducer_.communicator().allreduce_sum(std::span<double>(found));
  return found[0] > 0.0;
}

double ShardedParameters::gradient_norm() const {
  Communicator& c = reducer_.communicator();
  std::vector<Tensor> gradients;
  for (const Tensor& piece : pieces_) gradients.push_back(piece.grad());
  // Each rank's sum in its own slot, the others 0: the allreduce adds exact zeros, whatever its order.
  std::vector<double> sums(static_cast<std::size_t>(c.size()), 0.0);
  sums[static_cast<std::size_t>(c.rank())] = sum_of_squares(gradients);
  c.allreduce_sum(std::span<double>(sums));
  return in_rank_order(sums);
}

// Stage 1 gathers in the buckets, all at once. Stage 2 made them for the window and freed them, so
// it gathers one bucket at a time through a buffer of its layout, which is all the memory it adds.
void ShardedParameters::gather() {
  const NoGradGuard no_grad;
  const std::size_t buckets = reducer_.plan().buckets().size();
  if (!reducer_.shards_gradients()) {
    std::vector<std::unique_ptr<Work>> started;
    for (std::size_t b = 0; b < buckets; ++b) started.push_back(start_gather(b, reducer_.buffers()[b]));
    for (std::size_t b = 0; b < buckets; ++b) {
      started[b]->wait();
      take_gathered(b, reducer_.buffers()[b]);
    }
    return;
  }
  for (std::size_t b = 0; b < buckets; ++b) {
    const Tensor buffer =
        Tensor::zeros({reducer_.plan().buckets()[b].elements}, {.device = reducer_.device(), .category = MemoryCategory::temporaries});
    start_gather(b, buffer)->wait();
    take_gathered(b, buffer);
  }
}

// This rank's updated pieces in bucket b into `buffer` (of b's layout), and b's allgather started.
std::unique_ptr<Work> ShardedParameters::start_gather(std::size_t b, const Tensor& buffer) const {
  for (std::size_t k = 0; k < pieces_.size(); ++k) {
    const ShardPlan::Piece& p = placed_[k];
    if (p.bucket == b) kernels::copy(pieces_[k], buffer.narrow(p.bucket_offset, p.bucket_offset + p.elements));
  }
  return reducer_.communicator().start_allgather(buffer, reducer_.shard_plan().bucket_counts(b));
}

// Bucket b's gathered parameters from `buffer` into every parameter of it.
void ShardedParameters::take_gathered(std::size_t b, const Tensor& buffer) const {
  const BucketPlan::Bucket& bucket = reducer_.plan().buckets()[b];
  for (std::size_t k = 0; k < bucket.parameters.size(); ++k) {
    const Tensor& param = reducer_.parameters()[bucket.parameters[k]];
    kernels::copy(buffer.narrow(bucket.offsets[k], bucket.offsets[k] + param.numel()), flat_part(param, 0, param.numel()));
  }
}

void ShardedParameters::drop_gradients() {
  for (Tensor param : reducer_.parameters()) param.set_grad(Tensor{});
  for (Tensor piece : pieces_) piece.set_grad(Tensor{});
  reducer_.release_part();
}

double gradient_norm_in_parts(const Reducer& reducer) {
  const ShardPlan& shards = reducer.shard_plan();
  std::vector<double> sums;
  for (int r = 0; r < shards.ranks(); ++r) {
    std::vector<Tensor> gradients;
    for (const ShardPlan::Piece& p : shards.pieces(r)) {
      const Tensor grad = reducer.parameters()[p.parameter].grad();
      if (grad.defined()) gradients.push_back(flat_part(grad, p.offset, p.elements));
    }
    sums.push_back(sum_of_squares(gradients));
  }
  return in_rank_order(sums);
}

}  // namespace accrue::distributed
