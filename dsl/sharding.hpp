#pragma once
// What a data-parallel run shards over its processes (FitOptions::shard, and the memory plan of
// one process, DataParallel in memory_plan.hpp).

namespace accrue {

namespace distributed {
enum class Sharding;
}  // namespace distributed

/// What a distributed run (FitOptions::distributed) shards over its processes, as ZeRO does
/// (arXiv 1910.02054; PyTorch's ZeroRedundancyOptimizer, DeepSpeed's stages).
enum class Shard {
  /// Every process keeps all of the optimizer's state and steps every parameter (PyTorch's DDP).
  none,
  /// ZeRO stage 1: each process owns a contiguous shard of the flattened parameters (balanced, on
  /// 64-byte boundaries); at each window's close the gradients are reduce-scattered (one call per
  /// bucket), each process unscales, clips and steps its shard alone, keeping optimizer state for
  /// it alone, and the updated parameters are gathered. The parameters equal the unsharded run's
  /// bit for bit (every data-parallel run adds its sums and its gradient norm in the same order).
  /// Element-wise optimizers only (not LARS or LAMB, whose steps need each parameter whole).
  optimizer_state,
  /// ZeRO stage 2: stage 1, and each process keeps only its shard of the summed gradients between
  /// windows; FitOptions::shard_accumulation says when the gradients are reduce-scattered.
  gradients,
};

/// When a run with Shard::gradients reduce-scatters the gradients of a window of K micro-batches.
enum class ShardAccumulation {
  /// Once, at the window's close, as every other data-parallel run (the same traffic): the whole
  /// gradients accumulate through the window and are freed after the close. Parameters equal
  /// the unsharded run's bit for bit.
  reduce_at_window_close,
  /// After every micro-batch, each process adding the sums of its shard (DeepSpeed's ZeRO-2): the
  /// whole gradients live only during a backward pass, for K times the traffic. The window's sum
  /// is then added in another order (micro-batches outside, processes inside), so with K > 1 the
  /// parameters equal the unsharded run's to float32 rounding, not bit for bit.
  reduce_each_micro_batch,
};

/// The reducer's sharding (framework/distributed/reducer.hpp) for a run's .shard and
/// .shard_accumulation.
distributed::Sharding reducer_sharding(Shard shard, ShardAccumulation accumulation);

}  // namespace accrue
