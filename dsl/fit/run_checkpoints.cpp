#include "run_checkpoints.hpp"

#include <filesystem>

#include "../../framework/core/files.hpp"
#include "../../framework/core/log.hpp"
#include "../../framework/training/stop_signal.hpp"

namespace accrue::detail {

// The checkpoint to continue from: `resume_from` (a file, or the newest in a folder), else the
// newest in the checkpoint folder when resuming is on. A newest one in a folder that is damaged or
// cannot be read is skipped with a warning; a named file that is, or a folder of only such ones, is
// an error.
std::optional<TrainingCheckpoint> find_checkpoint(const std::string& resume_from, const CheckpointOptions& options) {
  std::string dir = options.resume ? options.dir : std::string{};
  if (!resume_from.empty()) {
    if (!is_folder(resume_from, "resume_from")) return TrainingCheckpoint::read(resume_from);
    dir = resume_from;
  }
  if (dir.empty()) return std::nullopt;
  const std::vector<std::string> found = checkpoints_in(dir);
  if (found.empty()) {
    if (!resume_from.empty())
      throw IoError(fmt::format("resume_from: {} holds no training checkpoint (checkpoint-<n>.safetensors)", dir));
    return std::nullopt;
  }
  std::string problems;
  for (const std::string& path : found) {
    try {
      return TrainingCheckpoint::read(path);
    } catch (const IoError& e) {
      log::warning("{}; trying the one before it", e.what());
      problems += fmt::format("\n  {}", e.what());
    }
  }
  throw IoError(fmt::format("no training checkpoint in {} can be used, so the run cannot continue; move them away to "
                            "start afresh:{}",
                            dir, problems));
}

RunCheckpoints::RunCheckpoints(const CheckpointOptions& options, std::string resume_from)
    : options_(options), resume_from_(std::move(resume_from)) {}

void RunCheckpoints::open() {
  if (writes()) folder_lock_.emplace(prepare_checkpoint_dir(options_.dir));
  resumed_ = find_checkpoint(resume_from_, options_);
}

void RunCheckpoints::continue_from(const std::string& path) {
  if (!path.empty()) resumed_ = TrainingCheckpoint::read(path);
}

void RunCheckpoints::start_clock() { clock_start_ = std::chrono::steady_clock::now(); }

bool RunCheckpoints::due_by_clock() const {
  return writes() && options_.every_seconds > 0 &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - clock_start_).count() >= options_.every_seconds;
}

void RunCheckpoints::count_micro_batches(std::int64_t micro_batches) {
  owed_ = owed_ || (writes() && options_.every_micro_batches > 0 && micro_batches % options_.every_micro_batches == 0);
}

void RunCheckpoints::write(const RunParts& parts, std::int64_t micro_batches, const std::vector<Callback*>& callbacks,
                           distributed::Communicator& processes) {
  last_path_ = (std::filesystem::path(options_.dir) / checkpoint_name(micro_batches)).string();
  std::vector<std::string> rank_states;
  if (processes.size() > 1) {
    const std::string mine = rank_state(parts);
    for (int r = 0; r < processes.size(); ++r) rank_states.push_back(processes.broadcast(mine, r));
  }
  const std::string shards = write_shards(parts, processes);
  if (processes.rank() == 0) {
    write_training_checkpoint(last_path_, parts, signature_, callbacks, rank_states, shards);
    keep_newest_checkpoints(options_.dir, options_.keep);
  }
  owed_ = false;
  start_clock();
}

// A sharded run's processes each write their optimizer shard; all know whether all did before
// process 0 writes the checkpoint that names them. Returns their record (empty: not sharded).
std::string RunCheckpoints::write_shards(const RunParts& parts, distributed::Communicator& processes) const {
  if (parts.placement == nullptr || !parts.placement->sharded()) return {};
  std::int64_t bytes = 0;
  std::string failed;
  try {
    bytes = write_optimizer_shard(last_path_, *parts.placement, parts.optimizer.state(), processes.size());
  } catch (const Error& e) {
    failed = e.what();
  }
  const std::vector<std::int64_t> sizes = processes.allgather(failed.empty() ? bytes : -1);
  for (int r = 0; r < processes.size(); ++r)
    if (sizes[static_cast<std::size_t>(r)] < 0)
      throw IoError(fmt::format("checkpoint {}: process {} could not write its optimizer shard: {}", last_path_, r,
                                processes.broadcast(failed, r)));
  return shards_record(*parts.placement, sizes);
}

Interrupted RunCheckpoints::stopped(int signal, const std::string& at, std::int64_t optimizer_steps) const {
  if (!writes())
    return Interrupted(fmt::format("training stopped by {} {} ({} optimizer steps); no checkpoint folder is set "
                                   "(checkpoint.dir), so this run cannot be continued",
                                   signal_name(signal), at, optimizer_steps),
                       signal);
  return Interrupted(fmt::format("training stopped by {} {} ({} optimizer steps); checkpoint {} holds it: run the same "
                                 "training again to continue from there",
                                 signal_name(signal), at, optimizer_steps, last_path_),
                     signal);
}

}  // namespace accrue::detail
