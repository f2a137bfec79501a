// fit() and evaluate(): the Keras-style training loop.

#include <cmath>

#include "accrue/datasets/loader.hpp"
#include "accrue/dsl/progress_bar.hpp"
#include "accrue/dsl/sequential.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/ops.hpp"

namespace accrue {

namespace {

// Restores the model's training flag when the loop leaves, normally or by an exception.
class TrainingModeGuard {
 public:
  TrainingModeGuard(Sequential& model, bool training) : model_(model), previous_(model.training()) {
    model.set_training(training);
  }
  ~TrainingModeGuard() { model_.set_training(previous_); }
  TrainingModeGuard(const TrainingModeGuard&) = delete;
  TrainingModeGuard& operator=(const TrainingModeGuard&) = delete;

 private:
  Sequential& model_;
  bool previous_;
};

// The epoch's running means: the loss per sample and every metric.
Logs running_logs(const metrics::MeanLoss& loss, const std::vector<Metric>& metrics, const std::string& prefix = "") {
  Logs logs;
  logs.set(prefix + "loss", loss.result());
  for (const Metric& m : metrics) logs.set(prefix + m.name(), m.result());
  return logs;
}

std::string batch_context(int epoch, int epochs, std::int64_t batch, std::int64_t batches, std::int64_t first,
                          std::int64_t size) {
  return fmt::format("epoch {}/{}, batch {}/{} (samples {}..{} of the epoch): ", epoch + 1, epochs, batch + 1, batches,
                     first, first + size - 1);
}

}  // namespace

History Sequential::fit(const Dataset& train, const FitOptions& options) {
  check_compiled("fit()");
  ACCRUE_CHECK(options.epochs >= 1, "fit: epochs must be at least 1, got {}", options.epochs);
  ACCRUE_CHECK(options.batch_size >= 1, "fit: batch_size must be at least 1, got {}", options.batch_size);
  ACCRUE_CHECK(!train.empty(), "fit: the training set '{}' is empty", train.name());
  ACCRUE_CHECK(options.verbose >= 0 && options.verbose <= 2, "fit: verbose must be 0, 1 or 2, got {}", options.verbose);
  build(train.sample_shape());
  if (options.validation)
    ACCRUE_CHECK_SHAPE(options.validation->sample_shape() == train.sample_shape(),
                       "fit: validation samples '{}' have shape {}, training samples {}", options.validation->name(),
                       options.validation->sample_shape(), train.sample_shape());
  ensure_optimizer();

  const std::uint64_t seed = options.seed ? *options.seed : (static_cast<std::uint64_t>(generator_->next_u32()) << 32);
  DataLoader loader{train, {.batch_size = options.batch_size, .shuffle = options.shuffle, .seed = seed,
                            .drop_last = options.drop_last}};
  ACCRUE_CHECK(loader.size() > 0, "fit: {} samples make no batch of {} with drop_last", train.size(),
               options.batch_size);

  std::vector<Callback*> callbacks;
  std::optional<callbacks::ProgressBar> progress;
  if (options.verbose > 0) {
    progress.emplace(callbacks::ProgressBarOptions{
        .mode = options.verbose == 2 ? callbacks::ProgressBarOptions::Mode::lines
                                     : callbacks::ProgressBarOptions::Mode::automatic});
    callbacks.push_back(&*progress);
  }
  for (const CallbackHandle& c : options.callbacks) callbacks.push_back(c.get());

  const TrainInfo info{options.epochs, loader.size(), options.drop_last ? loader.size() * options.batch_size : train.size(),
                       options.batch_size};
  for (Callback* c : callbacks) c->on_train_begin(info);

  History history;
  optim::Optimizer& opt = *optimizer_;
  const bool mean = loss_.reduction() == Reduction::mean;
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    const TrainingModeGuard mode{*this, true};
    loader.set_epoch(epoch);
    metrics::MeanLoss epoch_loss;
    for (Metric& m : metrics_) m.reset();
    for (Callback* c : callbacks) c->on_epoch_begin(epoch);

    for (std::int64_t b = 0; b < loader.size(); ++b) {
      const Batch batch = loader[b];
      try {
        opt.zero_grad();
        const Tensor prediction = forward(batch.inputs);
        const Tensor loss_sum = loss_.batch_sum(prediction, batch.targets);
        const double loss_value = loss_sum.item();
        if (!std::isfinite(loss_value))
          throw NonFiniteError(fmt::format("the loss is {}; lower the learning rate, or check the inputs for inf and NaN",
                                           loss_value));
        // The step's gradient is that of the mean (or the sum) over the batch's samples.
        const Tensor objective = mean ? loss_sum * (1.0f / static_cast<float>(batch.size())) : loss_sum;
        objective.backward();
        opt.step();
        const NoGradGuard no_grad;
        epoch_loss.update(prediction, batch.targets, loss_value);
        for (Metric& m : metrics_) m.update(prediction, batch.targets, loss_value);
      } catch (Error& e) {
        e.prepend(batch_context(epoch, options.epochs, b, loader.size(), b * options.batch_size, batch.size()));
        throw;
      }
      if (!callbacks.empty()) {
        const Logs logs = running_logs(epoch_loss, metrics_);
        for (Callback* c : callbacks) c->on_batch_end(b, logs);
      }
    }
    opt.zero_grad();

    Logs logs = running_logs(epoch_loss, metrics_);
    if (options.validation) {
      const Evaluation val = evaluate(*options.validation, {.batch_size = options.batch_size});
      for (const auto& [name, value] : val.logs.items()) logs.set("val_" + name, value);
    }
    history.append(logs);
    for (Callback* c : callbacks) c->on_epoch_end(epoch, logs);
  }
  for (Callback* c : callbacks) c->on_train_end(history.logs().back());
  return history;
}

Evaluation Sequential::evaluate(const Dataset& data, const EvaluateOptions& options) {
  check_compiled("evaluate()");
  ACCRUE_CHECK(options.batch_size >= 1, "evaluate: batch_size must be at least 1, got {}", options.batch_size);
  ACCRUE_CHECK(!data.empty(), "evaluate: the dataset '{}' is empty", data.name());
  const NoGradGuard no_grad;
  const TrainingModeGuard mode{*this, false};
  metrics::MeanLoss loss;
  std::vector<Metric> metrics = metrics_;  // copies: evaluation leaves the training metrics alone
  for (Metric& m : metrics) m.reset();
  const DataLoader loader{data, {.batch_size = options.batch_size}};
  for (std::int64_t b = 0; b < loader.size(); ++b) {
    const Batch batch = loader[b];
    try {
      const Tensor prediction = forward(batch.inputs);
      const double loss_value = loss_.batch_sum(prediction, batch.targets).item();
      loss.update(prediction, batch.targets, loss_value);
      for (Metric& m : metrics) m.update(prediction, batch.targets, loss_value);
    } catch (Error& e) {
      e.prepend(fmt::format("evaluating '{}', batch {}/{}: ", data.name(), b + 1, loader.size()));
      throw;
    }
  }
  Evaluation result;
  result.loss = loss.result();
  result.logs = running_logs(loss, metrics);
  return result;
}

}  // namespace accrue
