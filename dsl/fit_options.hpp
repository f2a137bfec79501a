#pragma once
// The options of fit() and of a Trainer (trainer.hpp), and of the training checkpoints they write.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../datasets/dataset.hpp"
#include "callbacks.hpp"
#include "sharding.hpp"
#include "layers/recompute.hpp"
#include "../framework/optim/accumulation.hpp"
#include "../framework/training/lr_schedule.hpp"

namespace accrue {

/// Training checkpoints written during fit (see FitOptions::checkpoint).
struct CheckpointOptions {
  /// Folder for the checkpoints ("checkpoint-<micro-batches>.safetensors"); none when empty.
  std::string dir = {};
  /// Also write one every this many micro-batches (0: at the end of each epoch only). It may fall
  /// inside an accumulation window: the window's gradients so far are saved with it.
  std::int64_t every_micro_batches = 0;
  /// Also write one when this many seconds have passed since the last (0: off).
  double every_seconds = 0.0;
  /// How many to keep, newest first; older ones are deleted.
  int keep = 2;
  /// Continue from the newest readable checkpoint in `dir` when there is one (a damaged one is
  /// skipped with a warning and the one before it used).
  bool resume = true;
};

/// How fit's memory planner searches under a memory budget (Recipe::memory_budget, or a memory
/// limit with effective_batch): every micro-batch dividing the effective batch, with and without
/// recomputation, kept where its memory plan fits; the most promising few timed on the model.
struct PlannerOptions {
  /// At most this many candidates timed, one forward and backward pass each per round; the fastest
  /// per sample trains. Those timed: every micro-batch that fits without recomputation (on a CPU a
  /// smaller one is often faster), and with recomputation the micro-batches only it fits, largest
  /// first. 0: no timing, the largest micro-batch that fits, with the least recomputation among
  /// equals.
  int timed = 8;
  /// Rounds of timing, the candidates alternating within each; the first round warms up.
  int rounds = 3;
  /// Also try recomputation (every TransformerBlock or Residual, sqrt(n) segments) unless
  /// FitOptions::recompute fixes it.
  bool recompute = true;
  /// In a distributed run whose FitOptions::shard is none, a micro-batch the unsharded plan does
  /// not fit is planned again sharding the optimizer state (ZeRO stage 1: the same bits), then the
  /// gradients reduced each micro-batch (stage 2: the sums in another order, K times the traffic);
  /// the least that fits is the candidate's. The timing measures computation, not communication.
  bool shard = true;
};

/// Options of fit() and of a Trainer, with Keras's defaults where Keras has them.
struct FitOptions {
  int epochs = 1;
  /// Samples per forward pass: the micro-batch when accumulating.
  std::int64_t batch_size = 32;
  /// Evaluated after every epoch; its results are logged as val_loss, val_<metric>.
  std::optional<Dataset> validation = {};
  /// Micro-batches per optimizer step (an int, `{{0, 8}, {4, 2}}`, ...); or set it in compile()
  /// with `opt.accumulate(...)`, not both.
  AccumulationSchedule accumulate = {};
  AccumulateOptions accumulate_options = {};
  /// Learning-rate schedule over optimizer steps (constant by default).
  LrSchedule schedule = {};
  std::vector<CallbackHandle> callbacks = {};
  /// Keras's class_weight: each training sample's loss is multiplied by its class's weight (1 for
  /// a class left out; classes as class_weight_per_sample in loss.hpp reads them), and by its own
  /// weight when the dataset has some (Dataset::with_sample_weights). A window's loss is then its
  /// samples' weighted sum divided by their number, as one batch of them would have it, also over
  /// processes. The metrics stay unweighted, as Keras's `metrics=`.
  std::map<std::int64_t, float> class_weight = {};
  /// Recompute the layers this policy picks (Model::recompute; the model keeps it after fit);
  /// none: as the model is.
  std::optional<RecomputePolicy> recompute = {};
  /// The memory planner's search (PlannerOptions): only under a memory budget or limit.
  PlannerOptions planner = {};
  /// Reshuffle the training data every epoch.
  bool shuffle = true;
  /// Seed of the shuffling and of the transforms' randomness (transforms.hpp); by default drawn
  /// from the model's generator (and saved in checkpoints).
  std::optional<std::uint64_t> seed = {};
  /// Background threads reading a dataset that is not in memory (files, transforms): -1, one per
  /// core up to 4; 0 reads on the training thread.
  int data_workers = -1;
  /// Leave out a short last batch.
  bool drop_last = false;
  /// 0: silent; 1: a live bar on a terminal, one line per epoch otherwise; 2: one line per epoch.
  int verbose = 1;
  /// Compute the gradient norm at every optimizer step even without clipping (StepRecord).
  bool track_grad_norm = false;
  /// Print what happens at each micro-batch and step of the first `explain` windows.
  int explain = 0;
  /// When a window runs out of memory (OutOfMemory in its forward or backward pass): halve the
  /// micro-batch, double the accumulation (the effective batch, the samples of every window and
  /// so the learning-rate schedule stay as they were), redo the window, and log the new plan once.
  /// Repeats down to a micro-batch of 1. Metrics are then updated at each window's end.
  bool backoff_on_oom = false;
  /// Write training checkpoints, and resume from the newest one: `{.dir = "ckpt", .every_micro_batches = 500}`.
  CheckpointOptions checkpoint = {};
  /// A training checkpoint to continue from (a file, or a folder whose newest checkpoint is used).
  /// The run must have the same model, data and options; on the CPU with the same thread count it
  /// then ends with the same parameters, bit for bit, as a run never interrupted.
  std::string resume_from = {};
  /// While fit runs, SIGINT (Ctrl-C) and SIGTERM stop training after the current micro-batch: a
  /// checkpoint is written when `checkpoint.dir` is set, and fit throws Interrupted saying where
  /// it stopped and how to continue. A second signal ends the process at once. false leaves the
  /// signals to the program.
  bool stop_on_signal = true;
  /// Data parallelism over the processes mpirun started (`mpirun -np 4 ./train`): each process
  /// trains its share of every global micro-batch of batch_size x processes samples, the gradients
  /// are summed over the processes once per optimizer step, and the epoch's metrics over all
  /// samples. Effective batch = batch_size x accumulation x processes; the result is that of one
  /// process with batch_size x processes. Alone (no mpirun) it changes nothing.
  bool distributed = false;
  /// A distributed run's gradient buckets: each starts its reduction as soon as backward has
  /// completed its gradients, overlapping the rest of backward (PyTorch DDP's bucket_cap_mb).
  std::size_t bucket_bytes = 25u << 20;
  /// What a distributed run shards over its processes (Shard): by default nothing, every process
  /// keeping the whole optimizer state.
  Shard shard = Shard::none;
  /// With Shard::gradients: when the gradients are reduce-scattered (ShardAccumulation).
  ShardAccumulation shard_accumulation = ShardAccumulation::reduce_at_window_close;
};

/// A Trainer takes the same options as fit().
using TrainerOptions = FitOptions;

}  // namespace accrue
