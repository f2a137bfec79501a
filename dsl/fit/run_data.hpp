#pragma once
// The data a run reads (fit's TrainingRun holds one): its plan of epochs, windows and
// micro-batches; the loader of this process's share of each micro-batch and the batches it hands
// to the device (read ahead on background threads when the data is not in memory); and the
// current epoch's micro-batches. A back-off on out-of-memory plans and loads it anew.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "../../datasets/device_batches.hpp"
#include "../../datasets/loader.hpp"
#include "../../framework/training/step_plan.hpp"
#include "../fit_options.hpp"
#include "../model.hpp"

namespace accrue::detail {

/// The accumulation that applies to a run: its schedule and options.
struct RunAccumulation {
  AccumulationSchedule schedule;
  AccumulateOptions options;
};

/// The accumulation that applies to `model` under `options`: the fit/Trainer options', else the
/// compiled recipe's. Throws ValueError when both set one.
RunAccumulation resolve_accumulation(const Model& model, const TrainerOptions& options);

/// The plan of a run of `model` (compiled) on `train_size` samples under `options`, with
/// micro-batches of `micro_batch` on each process and the accumulation schedule multiplied by
/// `accumulation_factor` (both differ from the options' after an out-of-memory back-off). A
/// distributed run plans global micro-batches of micro_batch x processes.
StepPlan plan_run(const Model& model, const TrainerOptions& options, std::int64_t train_size,
                  std::int64_t micro_batch, int accumulation_factor);

class RunData {
 public:
  /// `train` and `options` must outlive it.
  RunData(const Dataset& train, const TrainerOptions& options);

  /// Micro-batches the queue holds ready besides the one in use (0 for data in memory): what a
  /// memory plan counts for the data.
  std::int64_t read_ahead() const { return read_ahead_; }

  /// Plans the run of `model` for micro-batches of `micro_batch` per process and the accumulation
  /// multiplied by `accumulation_factor` (see plan_run).
  void plan(const Model& model, std::int64_t micro_batch, int accumulation_factor);
  /// A new loader of the plan's micro-batches (this process's share: shard `rank` of `processes`),
  /// shuffled with `seed`, and the batches it hands to `device`.
  void load(std::uint64_t seed, int rank, int processes, Device device);

  const StepPlan& plan() const { return *plan_; }
  const DataLoader& loader() const { return *loader_; }
  bool reads_ahead() const { return batches_ && batches_->reads_ahead(); }

  /// Positions the loader at `epoch`, drops what was read ahead, and returns the epoch's windows
  /// from micro-batch `from` (0, or where a checkpoint or a back-off resumes).
  std::vector<EpochWindow> begin_epoch(int epoch, std::int64_t from);
  /// How many micro-batches the current epoch has.
  std::int64_t epoch_micro_batches() const { return epoch_micro_batches_; }
  /// Micro-batch `index` of the epoch on the device; starts moving the next one, if any.
  Batch get(std::int64_t index);
  /// Seconds get() has waited for data so far.
  double waited_seconds() const { return batches_->waited_seconds(); }

 private:
  const Dataset& train_;
  const TrainerOptions& options_;
  std::int64_t read_ahead_ = 0;
  std::int64_t micro_batch_ = 0;  // per process
  std::optional<StepPlan> plan_;
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<DeviceBatches> batches_;
  std::int64_t epoch_micro_batches_ = 0;
};

}  // namespace accrue::detail
