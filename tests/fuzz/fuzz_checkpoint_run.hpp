#pragma once
// The small run whose checkpoints fuzz_checkpoint restores: a model, its data and options, and
// the parts of the training loop a checkpoint is restored into.

#include <accrue/accrue.hpp>
#include <accrue/dsl/training_checkpoint.hpp>

#include <memory>
#include <vector>

namespace accrue::fuzz {

inline Dataset checkpoint_data() {
  Generator gen{4};
  const Tensor x = Tensor::normal({10, 3}, 0.0f, 1.0f, &gen);
  const std::vector<float> xv = x.to_vector();
  std::vector<std::int32_t> y(10);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = xv[i * 3] > 0 ? 1 : 0;
  return Dataset{x, Tensor::from(y, {10}), "fuzz"};
}

inline Sequential checkpoint_model() {
  manual_seed(3);
  Sequential m{layers::Input{3}, layers::Dense{4}, layers::ReLU{}, layers::Dense{2}};
  m.compile(optim::Adam{.amsgrad = true}.accumulate(2), losses::CrossEntropy{}, {metrics::Accuracy{}});
  return m;
}

inline std::vector<CallbackHandle> checkpoint_callbacks() {
  return {callbacks::EarlyStopping{{.monitor = "loss", .patience = 3, .restore_best_weights = true}},
          callbacks::NanGuard{}, callbacks::ReduceLROnPlateau{{.monitor = "loss"}}};
}

inline FitOptions checkpoint_options() {
  return FitOptions{.epochs = 2, .batch_size = 3, .callbacks = checkpoint_callbacks(), .verbose = 0,
                    .backoff_on_oom = true};
}

struct CheckpointRun {
  Sequential model = checkpoint_model();
  std::vector<CallbackHandle> owned = checkpoint_callbacks();
  std::vector<Callback*> callbacks;
  StepPlan plan{{.dataset_size = 10, .micro_batch = 3, .epochs = 2, .schedule = model.recipe().accumulation()}};
  LrSchedule schedule;
  TrainingContext context;
  std::vector<Metric> metrics = model.metrics();
  detail::RunState run;

  CheckpointRun() {
    context.model = &model;
    context.plan = &plan;
    context.epochs = 2;
    for (const CallbackHandle& c : owned) {
      callbacks.push_back(c.get());
      c->on_train_begin(context);
    }
  }
  void restore(const detail::TrainingCheckpoint& checkpoint) {
    detail::RunParts parts{model, model.optimizer(), model.scaler(), schedule, context, metrics, run};
    checkpoint.restore(parts);
    checkpoint.restore_callbacks(callbacks);
  }
};

}  // namespace accrue::fuzz
