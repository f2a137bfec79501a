#pragma once
// What fit's memory planner considered and chose for a memory budget (Recipe::memory_budget, or a
// memory limit with effective_batch): each way of holding the effective batch (micro-batch x
// accumulation, with or without recomputation), its planned peak, and for the most promising few
// the measured time per sample. The choice is the fastest of those timed.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layers/recompute.hpp"
#include "sharding.hpp"

namespace accrue {

struct PlanCandidate {
  std::int64_t micro_batch = 0;
  /// Micro-batches per optimizer step: micro_batch x accumulation (x processes) is the effective batch.
  std::int64_t accumulation = 0;
  RecomputePolicy recompute;
  /// What each process shards (PlannerOptions::shard).
  Shard shard = Shard::none;
  ShardAccumulation shard_accumulation = ShardAccumulation::reduce_at_window_close;
  /// Model::memory_plan's peak for this micro-batch, recomputation and sharding (of the process
  /// with the largest share).
  std::size_t planned_peak = 0;
  bool fits = false;
  /// One forward and backward pass on the real model, per sample (the fastest of the rounds, summed
  /// over the processes of a distributed run); none when not timed.
  std::optional<double> seconds_per_sample;
  /// Why a timed candidate has no time (it ran out of memory after all).
  std::string failed;
};

struct PlanChoice {
  std::size_t budget = 0;
  /// What the budget is: "memory_budget(256 MiB)", "the limit of 64 MiB less 3 MiB of data".
  std::string budget_name;
  std::int64_t effective_batch = 0;
  int processes = 1;
  /// Whether the planner could shard (PlannerOptions::shard): the table then shows each candidate's.
  bool shardings = false;
  /// Every candidate that fits, and for each recomputation the next larger micro-batch that does
  /// not (where the budget cuts); largest micro-batch first.
  std::vector<PlanCandidate> candidates;
  std::size_t chosen = 0;  // index into candidates
  /// Why the chosen one: "fastest of 4 timed", "the only one that fits", "the largest micro-batch
  /// that fits (not timed: PlannerOptions::timed = 0)".
  std::string reason;

  const PlanCandidate& choice() const { return candidates.at(chosen); }
  /// The table the banner and the report show: one row per candidate, the choice marked.
  std::string str() const;
};

}  // namespace accrue
