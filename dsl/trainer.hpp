#pragma once
// Trainer: the training loop, for longer runs (Model::fit runs the same loop):
//
//   Trainer trainer{{
//       .epochs = 10,
//       .batch_size = 8,                                  // the micro-batch
//       .accumulate = {{0, 8}, {4, 2}},                   // 8 from epoch 0, 2 from epoch 4
//       .schedule = schedules::warmup_cosine({.warmup_ratio = 0.05}),
//       .callbacks = {callbacks::CSVLogger{"log.csv"}},
//   }};
//   trainer.fit(model, train, test);
//
// Each optimizer step closes a window of micro-batches (see framework/optim/accumulation.hpp):
// every micro-batch's summed loss is weighted by 1 / (samples in the window) before backward, so
// the gradients that add up in .grad() are those of the window's mean loss; then close_window
// (framework/training/window_close.hpp) unscales, checks, clips, steps and zeroes, in the order it
// documents. The loop itself is TrainingRun::fit (fit/loop.cpp).

#include <optional>

#include "fit_options.hpp"
#include "model.hpp"
#include "../framework/training/step_plan.hpp"

namespace accrue {

class Trainer {
 public:
  /// Checks what the options alone can tell (epochs, batch size, the accumulation schedule, the
  /// accumulation policy) and throws ValueError saying what to change.
  explicit Trainer(TrainerOptions options);

  /// Trains the compiled `model` on `train`, evaluating `validation` after each epoch when given
  /// (else options.validation), and returns the per-epoch logs.
  History fit(Model& model, const Dataset& train, std::optional<Dataset> validation = {});

  /// What one fit call adds to the Trainer's options.
  struct Run {
    std::optional<Dataset> validation = {};
    /// A training checkpoint (file or folder) to continue from; overrides options().resume_from.
    std::string resume_from = {};
  };
  /// `trainer.fit(model, train, {.validation = test, .resume_from = "ckpt"})`.
  History fit(Model& model, const Dataset& train, Run run);

  /// The run's plan for `model` (compiled) and a training set of `train_size` samples, before any
  /// training: windows, total optimizer steps. Throws for conflicting or invalid settings. (A
  /// memory budget, or an out-of-memory back-off, gives the run itself other micro-batches.)
  StepPlan plan(const Model& model, std::int64_t train_size) const;
  std::int64_t total_optimizer_steps(const Model& model, std::int64_t train_size) const {
    return plan(model, train_size).total_optimizer_steps();
  }

  const TrainerOptions& options() const { return options_; }

 private:
  TrainerOptions options_;
};


}  // namespace accrue
