#pragma once
// Training checkpoints: everything the training loop needs to continue a run exactly where it
// stood between two micro-batches (see FitOptions::checkpoint and resume_from). Written and read
// by TrainingRun (fit/checkpoints.cpp); the file format is framework/serialization/checkpoint.hpp.
//
// A checkpoint holds the parameters and buffers, the gradients gathered so far in an open
// accumulation window, the optimizer's state, the loss scaler, the schedule's state, both random
// generators, the shuffling seed, the epoch and the next micro-batch in it, the current
// micro-batch and accumulation (after any back-off), the epoch's running metrics, the history so
// far and each callback's state; for a distributed run also the number of processes and each
// one's generators and running metrics.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "callbacks.hpp"
#include "metrics.hpp"
#include "model.hpp"
#include "optimizer_shards.hpp"

namespace accrue::detail {

/// A window's metric update held back until the window closes (backoff_on_oom): the outputs'
/// predictions and targets, each output's summed loss and units, and the batch's samples.
struct PendingUpdate {
  std::vector<Tensor> predictions, targets;
  std::vector<double> losses;
  std::vector<std::int64_t> units;
  std::int64_t samples = 0;
};

/// The loop's own state between two micro-batches.
struct RunState {
  int epoch = 0;
  /// Index into the epoch's slots of the next micro-batch to train.
  std::size_t next_slot = 0;
  /// Micro-batches trained over the run (numbers the checkpoint files).
  std::int64_t micro_batches = 0;
  bool window_poisoned = false;
  std::uint64_t loader_seed = 0;
  std::int64_t batch_size = 0;
  int accumulation_factor = 1;
  metrics::MeanLoss epoch_loss;
  std::vector<PendingUpdate> pending;
  History history;
};

/// What must be the same in a run that resumes a checkpoint, as (name, value) text.
using RunSignature = std::vector<std::pair<std::string, std::string>>;

/// The parts of a run a checkpoint reads and writes.
struct RunParts {
  Model& model;
  optim::Optimizer& optimizer;
  GradScaler* scaler;
  LrSchedule& schedule;
  TrainingContext& context;
  std::vector<Metric>& metrics;
  RunState& run;
  /// Where the optimizer's state lies (each process's pieces in a sharded run); null: the model's
  /// parameters whole, and a sharded checkpoint cannot be restored.
  const OptimizerPlacement* placement = nullptr;
};

/// This process's own part of a distributed run's state, as text for write_training_checkpoint:
/// its random generators and its share of the epoch's running loss and metrics.
std::string rank_state(const RunParts& parts);

/// Writes a checkpoint of `parts` to `path` atomically. A distributed run's process 0 writes it
/// with every process's rank_state, in rank order, in `rank_states` (empty: one process). A
/// sharded run's processes have written their optimizer shards first (write_optimizer_shard):
/// `shards` is their record (shards_record), and the file then holds no optimizer tensors.
void write_training_checkpoint(const std::string& path, const RunParts& parts, const RunSignature& signature,
                               const std::vector<Callback*>& callbacks,
                               const std::vector<std::string>& rank_states = {}, const std::string& shards = {});

/// A verified checkpoint file, read but not yet applied.
class TrainingCheckpoint {
 public:
  /// Reads and verifies `path` (and that the optimizer shards it lists are there, of their
  /// sizes); throws IoError for a damaged file or shard.
  static TrainingCheckpoint read(const std::string& path);
  const std::string& path() const { return path_; }

  /// Throws ValueError listing every way `now` differs from the run that wrote the checkpoint.
  void check_signature(const RunSignature& now) const;
  /// The micro-batch and accumulation factor the run had reached (after any back-off), and its
  /// shuffling seed: needed before the plan and the loader are made.
  std::int64_t batch_size() const;
  int accumulation_factor() const;
  std::uint64_t loader_seed() const;
  /// The number of processes of the run that wrote it.
  int processes() const;

  /// Puts the model, gradients, optimizer, scaler, generators, schedule, metrics and loop state
  /// back into process `rank` of `processes`. Checks every tensor's name, shape and dtype first and
  /// throws listing all problems, changing nothing then. With as many processes as wrote it, each
  /// takes back its own generators and running metrics; with another number, process 0 takes the
  /// sum of the writers' running metrics and the others start from zero.
  void restore(RunParts& parts, int rank = 0, int processes = 1) const;
  /// Hands each callback its saved state (after on_train_begin); a callback whose type differs
  /// from the one saved at its position starts afresh, with a warning.
  void restore_callbacks(const std::vector<Callback*>& callbacks) const;

 private:
  struct Data;
  std::string path_;
  std::shared_ptr<const Data> data_;
};

/// The checkpoint files in `dir` named by fit ("checkpoint-<micro-batches>.safetensors"), newest
/// first; none when `dir` does not exist. Throws IoError when it exists but cannot be listed (never
/// taken for an empty one).
std::vector<std::string> checkpoints_in(const std::string& dir);

/// The file name fit gives the checkpoint taken after `micro_batches` micro-batches.
std::string checkpoint_name(std::int64_t micro_batches);

/// An advisory lock (flock) on a checkpoint folder, held while a run writes checkpoints there, so a
/// second run is refused instead of taking over the first one's checkpoints. The lock file
/// (".accrue-lock") holds the holder's process id. The lock goes with the process, even a killed one.
class CheckpointFolderLock {
 public:
  /// Throws IoError naming the holder's process id when another run holds the folder.
  explicit CheckpointFolderLock(const std::string& dir);
  ~CheckpointFolderLock();
  CheckpointFolderLock(CheckpointFolderLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  CheckpointFolderLock& operator=(CheckpointFolderLock&&) = delete;

 private:
  int fd_ = -1;
};

/// Creates `dir` when needed, locks it for this run, and removes the temporary files of a run
/// killed while it wrote a checkpoint there. Throws IoError when the folder cannot be made or
/// listed, or another run holds it.
[[nodiscard]] CheckpointFolderLock prepare_checkpoint_dir(const std::string& dir);

/// Deletes all but the newest `keep` checkpoints in `dir`, and optimizer shards of none kept.
void keep_newest_checkpoints(const std::string& dir, int keep);

}  // namespace accrue::detail
