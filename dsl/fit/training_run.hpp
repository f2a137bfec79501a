#pragma once
// One call of fit: the run's state and the training loop over it (Trainer::fit makes one and calls
// fit()). The loop is TrainingRun::fit in loop.cpp; the rest of the run lives beside it, one
// concern per file:
//   loop.cpp         fit's loop: epochs, windows and their micro-batches (the batch, forward,
//                    weighted loss, backward), each window's close, and the steps it names
//   micro_batch_loss.cpp  a micro-batch's weighted loss, an inf or NaN loss, the running loss and
//                    metrics (what the loss counts is a LossUnits, loss_units.hpp)
//   setup.cpp        building, planning and preparing the run before its first window (the data
//                    it reads, its plan and loader, are a RunData, run_data.hpp)
//   plan_search.cpp  the memory planner: micro-batch, accumulation and recomputation for a budget
//   back_off.cpp     memory: the machine's memory checked, out-of-memory back-off
//   checkpoints.cpp  resuming, writing the run's checkpoint, and stopping on a signal (the folder,
//                    timing and files are a RunCheckpoints, run_checkpoints.hpp)
//   processes.cpp    a distributed run's preparation on every process (what the processes
//                    share while training is a RunProcesses, run_processes.hpp)

#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../fit_options.hpp"
#include "../plan_choice.hpp"
#include "../model.hpp"
#include "../training_checkpoint.hpp"
#include "loss_units.hpp"
#include "run_callbacks.hpp"
#include "run_checkpoints.hpp"
#include "run_data.hpp"
#include "run_processes.hpp"
#include "../../framework/training/step_modes.hpp"
#include "../../framework/training/step_plan.hpp"
#include "../../framework/training/stop_signal.hpp"

namespace accrue::detail {

class TrainingRun {
 public:
  /// Prepares the run: builds the model, plans it (memory budget, accumulation, schedule), takes
  /// the checkpoint folder, and restores the checkpoint to continue from when there is one.
  /// `options` must outlive the run and is never changed.
  TrainingRun(Model& model, const Dataset& train, std::optional<Dataset> validation,
              const TrainerOptions& options, const std::string& resume_from);
  TrainingRun(const TrainingRun&) = delete;  // the callbacks' context points into it
  TrainingRun& operator=(const TrainingRun&) = delete;

  /// Trains from where the run stands to its last epoch (or an early stop) and returns the history.
  History fit();
  /// The processes of the run (this one alone unless distributed).
  distributed::Communicator& communicator() { return processes_.all(); }

 private:
  // A micro-batch's forward: the model's outputs and each one's summed loss, with the units
  // (samples or tokens) it counts.
  struct MicroBatchLoss {
    std::vector<Tensor> predictions;
    std::vector<Tensor> sums;
    std::vector<double> values;
    std::vector<std::int64_t> units;
    double value = 0.0;  // the outputs' summed losses added: inf or NaN when one of them is
  };

  // loop.cpp: fit's loop and the steps it names, in the order it calls them.
  void begin_training();
  std::deque<EpochWindow> begin_epoch(int epoch);
  StepRecord start_record(const MicroBatchSlot& slot) const;
  std::optional<Batch> next_batch(const MicroBatchSlot& slot, StepRecord& record);
  MicroBatchLoss forward(const Batch& batch, StepRecord& record);
  bool skips_backward() const;
  Tensor weighted_loss(const MicroBatchSlot& slot, const MicroBatchLoss& loss, StepRecord& record) const;
  void backward(const MicroBatchSlot& slot, const Tensor& weighted_loss);
  void step(const MicroBatchSlot& slot, StepRecord& record);
  void reduce_micro_batch();
  double batch_factor(const MicroBatchSlot& slot) const;
  void end_micro_batch(const MicroBatchSlot& slot, const StepRecord& record);
  void between_micro_batches(const MicroBatchSlot& slot);
  void end_epoch(int epoch);
  History end_training();
  std::string error_prefix(const StepRecord& record) const;

  // micro_batch_loss.cpp
  void handle_nonfinite_loss(double loss, const StepRecord& record);
  void update_metrics(const MicroBatchLoss& loss, const Batch& batch);
  void apply_update(const PendingUpdate& update);
  void apply_held_back_updates();
  // The micro-batch's summed loss of each output, each sample's weighed by its weight when the run
  // has weights.
  std::vector<Tensor> micro_batch_losses(const Batch& batch, const std::vector<Tensor>& predictions,
                                         StepRecord& record) const;

  // setup.cpp
  void prepare_model();
  void plan_memory();
  void prepare_run();
  void prepare_sharding();
  std::string shard_refusal() const;
  void make_loader();
  void make_context();
  std::string sample_weighting() const;
  void replan();

  // back_off.cpp
  void check_machine_memory() const;
  std::deque<EpochWindow> back_off(OutOfMemory& e, const StepRecord& record);

  // checkpoints.cpp
  void resume();
  void write_checkpoint();
  std::vector<Callback*> saved_callbacks() const;
  RunParts run_parts();
  int stop_signal() const;
  void stop_if_signalled(int epoch, std::size_t next);
  [[noreturn]] void stop_in_validation(int epoch, const Interrupted& stopped);

  // processes.cpp
  void prepare_on_every_process();
  void share_checkpoint();
  void agree_to_start();

  Model& model_;
  Dataset train_;  // the inputs and targets in the model's order from prepare_model on (Model::arrange)
  std::optional<Dataset> validation_;
  const TrainerOptions& options_;
  RunProcesses processes_;
  // The processes and what they shard: FitOptions' .shard, or the memory planner's choice.
  DataParallel data_parallel_;
  optim::Optimizer* optimizer_ = nullptr;
  // A sharded run's optimizer over this process's pieces of the parameters (optimizer_ then).
  std::unique_ptr<optim::Optimizer> shard_optimizer_;
  // Where the optimizer's state lies, for checkpoints.
  OptimizerPlacement placement_;
  RunAccumulation accumulation_;
  LrSchedule schedule_;
  RunCheckpoints checkpoints_;
  // The position, the micro-batch and accumulation factor (after any back-off), the epoch's
  // running loss, held-back metric updates and the history: what a checkpoint saves besides the
  // model, optimizer, scaler, schedule, metrics and callbacks.
  RunState state_;
  RunData data_;
  std::optional<RunCallbacks> callbacks_;
  TrainingContext context_;
  std::vector<Tensor> parameters_;
  // What changes one step (autocast, shared statistics, reduction, deferred gradients, packs).
  std::optional<StepModes> modes_;
  std::optional<StopSignal> stop_signal_;
  // Memory that is not the model's (datasets held in memory, the user's tensors), for advice when
  // an allocation passes a limit.
  std::size_t live_besides_model_ = 0;
  std::optional<PlanChoice> plan_choice_;  // the memory planner's, under a budget
  // What each output's loss counts and weighs: samples or tokens, each sample's weight.
  std::vector<LossUnits> units_;
};

// plan_search.cpp: the memory planner's choice for `budget` (named so in messages): the micro-batch
// per process and the recomputation, which it sets on the model. Throws ValueError when nothing fits.
// `shardings`: each process's sharding the planner may choose, least sharding first (one when the run's own is fixed).
PlanChoice choose_plan(Model& model, const Dataset& train, std::size_t budget, std::string budget_name,
                       const TrainerOptions& options, distributed::Communicator& processes, std::int64_t read_ahead,
                       const std::vector<DataParallel>& shardings);
// checkpoints.cpp
std::int64_t resumed_micro_batch(const TrainingCheckpoint& checkpoint, const distributed::Communicator& processes);
RunSignature run_signature(const Model& model, const Dataset& train, const TrainerOptions& options,
                           const RunAccumulation& accumulation, const LrSchedule& schedule);

}  // namespace accrue::detail
