#pragma once
// A run's checkpoints (fit's TrainingRun holds one): the folder it writes them to, locked while the
// run goes; what must match to continue one (the run's signature) and the checkpoint it continues
// from; when the next one is due (every so many micro-batches or seconds); writing one; and the
// error of a run stopped by a signal, which names the checkpoint that holds it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../../framework/distributed/communicator.hpp"
#include "../../framework/core/error.hpp"
#include "../fit_options.hpp"
#include "../training_checkpoint.hpp"

namespace accrue::detail {

class RunCheckpoints {
 public:
  /// `options` must outlive the object; `resume_from` is fit's (a file, a folder, or empty).
  RunCheckpoints(const CheckpointOptions& options, std::string resume_from);

  /// Whether the run writes checkpoints: it has a folder for them.
  bool writes() const { return !options_.dir.empty(); }
  /// Whether it writes or reads them (then the run's signature is worth reading the data for).
  bool used() const { return writes() || !resume_from_.empty(); }
  /// Process 0's: the folder becomes this run's (a second run there is refused before it reads
  /// anything), and the checkpoint to continue from is found.
  void open();
  /// Another process's: continues from the checkpoint at `path`, the one process 0 found (none
  /// when empty).
  void continue_from(const std::string& path);

  /// What must be the same to continue this run's checkpoints (empty unless set).
  const RunSignature& signature() const { return signature_; }
  void set_signature(RunSignature signature) { signature_ = std::move(signature); }
  /// The checkpoint the run continues from, if any.
  const std::optional<TrainingCheckpoint>& resumed() const { return resumed_; }
  /// The checkpoint continued from was taken inside an epoch, which goes on from there: true once,
  /// for that epoch's start, after set_continues_epoch(true).
  void set_continues_epoch(bool inside) { continue_epoch_ = inside; }
  bool take_continued_epoch() { return std::exchange(continue_epoch_, false); }

  /// Starts the clock every_seconds counts from (the run's start; each write starts it again).
  void start_clock();
  /// every_seconds have passed since the clock started.
  bool due_by_clock() const;
  /// The run has trained `micro_batches` micro-batches: every_micro_batches makes a checkpoint
  /// owed, until one is written (a distributed run writes only at a window's close).
  void count_micro_batches(std::int64_t micro_batches);
  bool owed() const { return owed_; }

  /// Writes the checkpoint of `parts` after `micro_batches` micro-batches of the run, with the
  /// state of `callbacks`: every process calls it, process 0 writes the file with each process's
  /// own generators and running metrics (in a sharded run after every process wrote its optimizer
  /// shard); the oldest beyond options.keep are deleted.
  void write(const RunParts& parts, std::int64_t micro_batches, const std::vector<Callback*>& callbacks,
             distributed::Communicator& processes);
  /// The file written last (empty before the first).
  const std::string& last_path() const { return last_path_; }

  /// The error of a run stopped by `signal` `at` (where, in words) after `optimizer_steps` steps:
  /// the checkpoint that holds it, or that the run cannot be continued without a folder.
  Interrupted stopped(int signal, const std::string& at, std::int64_t optimizer_steps) const;

 private:
  std::string write_shards(const RunParts& parts, distributed::Communicator& processes) const;
  const CheckpointOptions& options_;
  std::string resume_from_;
  std::optional<CheckpointFolderLock> folder_lock_;
  RunSignature signature_;
  std::optional<TrainingCheckpoint> resumed_;
  bool continue_epoch_ = false;
  std::chrono::steady_clock::time_point clock_start_ = std::chrono::steady_clock::now();
  bool owed_ = false;
  std::string last_path_;
};

/// The checkpoint to continue from: `resume_from` (a file, or the newest in a folder), else the
/// newest in options.dir when options.resume. Throws IoError when a named one, or every one in a
/// folder, cannot be used.
std::optional<TrainingCheckpoint> find_checkpoint(const std::string& resume_from, const CheckpointOptions& options);

}  // namespace accrue::detail
