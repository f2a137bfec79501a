#pragma once
// A model's memory for one training step, predicted from shapes, dtypes and the optimizer before
// anything runs: Model::memory_plan(micro_batch), the walk in dsl/memory_planner.cpp.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "../framework/core/memory.hpp"
#include "sharding.hpp"

namespace accrue {

/// The processes of a data-parallel run and what they shard (FitOptions::distributed, .shard,
/// .shard_accumulation, .bucket_bytes): a plan made with more than one process is one process's.
struct DataParallel {
  int processes = 1;
  /// The process whose share is planned (the balanced shards may differ by 16 elements); -1: the
  /// process with the largest (what a memory budget must hold on every process).
  int rank = 0;
  Shard shard = Shard::none;
  ShardAccumulation accumulation = ShardAccumulation::reduce_at_window_close;
  std::size_t bucket_bytes = 25u << 20;
};

struct MemoryPlan {
  std::int64_t micro_batch = 0;
  /// Micro-batches a background queue holds ready besides the one training (BatchQueue).
  std::int64_t read_ahead = 0;
  Device device = Device::cpu();
  /// The precision the plan assumed ("float32", "bfloat16 autocast").
  std::string precision;
  /// The predicted peak of each category over a training step (forward, backward, optimizer step):
  /// parameters (buffers included), gradients, optimizer state, activations kept for backward,
  /// temporaries and workspaces, and data: one micro-batch of inputs and targets, and those read
  /// ahead (a dataset held in memory is not included).
  std::array<std::size_t, memory_category_count> peak{};
  /// The predicted peak of everything at once (not the sum of the category peaks, which fall at
  /// different moments).
  std::size_t peak_total = 0;
  /// What each node of the graph keeps for backward at this micro-batch (bytes), in the graph's
  /// order: a Sequential's layers in order.
  std::vector<std::size_t> kept_by_layer;
  /// The processes the plan is for; with more than one, each category is one process's: the
  /// gradients its reducer's buckets or its part of the sums (padding and flags included), the
  /// optimizer state that of the elements it steps.
  DataParallel data_parallel;
  /// Of the gradients and temporaries above, the most bytes one process holds at once in buffers for
  /// the gradients' reduction and the parameters' gather: the buckets, its part of the sums, the
  /// flags, and with stage 2 the gather's buffer. 0 for one process.
  std::size_t communication = 0;
  /// The gradient bytes a process keeps between windows (0 for one process, which frees them).
  std::size_t gradients_between_windows = 0;

  std::size_t peak_of(MemoryCategory c) const { return peak[static_cast<int>(c)]; }
  /// A table: one line per category and the total.
  std::string str() const;
};

/// What mixed precision changes in a plan: the plan as compiled (`mixed`) and the same step in
/// float32 (Model::precision_effect).
struct PrecisionEffect {
  MemoryPlan mixed, float32;
  /// One sentence on why the planned peak went up or down against float32, by category: "bfloat16
  /// autocast raises the planned peak from 5.43 MiB to 5.52 MiB (+0.10 MiB): its bfloat16 copies of
  /// the weights and inputs for the matrix products (temporaries +0.67 MiB) outweigh the activations
  /// kept for backward in bfloat16 (-0.13 MiB)." Empty when the plan is float32.
  std::string str() const;
};

}  // namespace accrue
