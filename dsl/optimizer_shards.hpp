#pragma once
// The optimizer state of a sharded run's checkpoints (ZeRO stages 1 and 2, FitOptions::shard).
// Each process steps its pieces of the parameters, so each writes the state of its pieces into a
// shard file of its own beside the checkpoint ("checkpoint-<n>.shard-<r>-of-<p>.safetensors",
// atomically, in the checkpoint format); process 0 then writes the checkpoint itself, which names
// every shard, its size and every process's pieces, last: a checkpoint whose file exists has all
// its shards. A run continues from one on any number of processes, sharded or not, by cutting the
// saved pieces' state into its own pieces (resharded_state); an unsharded checkpoint is one shard
// of whole parameters. The state of element-wise optimizers is element-wise, so the cut keeps
// every bit.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../framework/core/shape.hpp"
#include "../framework/optim/optimizer.hpp"

namespace accrue::detail {

/// A parameter's elements [offset, offset + elements) that one tensor of an optimizer's state
/// covers, and that tensor's shape (flat for a piece, the parameter's for a whole one).
struct StatePiece {
  std::string parameter;
  std::int64_t offset = 0, elements = 0;
  Shape shape;
};
using StatePieces = std::vector<StatePiece>;

/// Where a run's optimizer state lies: each process's pieces in its optimizer's order (in a
/// sharded run), and the model's parameters whole (its own optimizer's).
struct OptimizerPlacement {
  std::vector<StatePieces> processes;  // empty: not sharded
  int rank = 0;
  StatePieces whole;
  bool sharded() const { return !processes.empty(); }
  /// This process's optimizer's pieces.
  const StatePieces& mine() const { return sharded() ? processes[static_cast<std::size_t>(rank)] : whole; }
};

/// The shard file of process `rank` of `processes` beside checkpoint `path`.
std::string shard_path(const std::string& path, int rank, int processes);

/// Writes `state` (this process's optimizer's, over placement.mine()) to its shard file of
/// checkpoint `path`, atomically; returns the file's size.
std::int64_t write_optimizer_shard(const std::string& path, const OptimizerPlacement& placement,
                                   const optim::OptimizerState& state, int processes);

/// The counters of `state` that are the whole optimizer's ("steps"), not a parameter's ("3.step").
std::map<std::string, std::int64_t> whole_optimizer_counters(const optim::OptimizerState& state);

/// The checkpoint's record of its shards (JSON text for its state): their count, each one's size
/// and pieces.
std::string shards_record(const OptimizerPlacement& placement, const std::vector<std::int64_t>& shard_bytes);

/// Throws IoError naming the shard when one the record (shards_record's text) lists is missing or
/// of another size.
void check_shard_files(const std::string& path, const std::string& record);

/// This run's optimizer state (for placement.mine()) from checkpoint `path`: from the shard files
/// its `record` lists (shards_record's text), or, with none (an unsharded checkpoint), from `saved`,
/// its own tensors of whole parameters. Global counters ("steps") come from `saved`. Throws
/// IoError naming a damaged shard, ValueError naming a wanted piece the saved ones do not cover.
optim::OptimizerState resharded_state(const std::string& path, const std::string& record,
                                      const optim::OptimizerState& saved, const OptimizerPlacement& placement);

}  // namespace accrue::detail
