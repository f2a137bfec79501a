#pragma once
// A model's memory for one training step, predicted from shapes, dtypes and the optimizer before
// anything runs: Model::memory_plan(micro_batch), the walk in dsl/memory_planner.cpp.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "../framework/core/memory.hpp"

namespace accrue {

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
