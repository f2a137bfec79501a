// evaluate(): mean loss and metrics over a dataset, without recording autograd.

#include <cmath>

#include "../datasets/device_batches.hpp"
#include "../datasets/loader.hpp"
#include "layers/batch_norm.hpp"
#include "model.hpp"
#include "../framework/autograd/autograd.hpp"
#include "../framework/distributed/communicator.hpp"
#include "../framework/ops/ops.hpp"
#include "../framework/training/stop_signal.hpp"

namespace accrue {
namespace {

// The weights of the batch's samples when the dataset has weights; none otherwise.
std::vector<float> batch_weights(const Dataset& data, const Batch& batch) {
  const std::vector<float>* all = data.sample_weights();
  std::vector<float> weights;
  if (all != nullptr)
    for (const std::int64_t i : batch.samples) weights.push_back((*all)[static_cast<std::size_t>(i)]);
  return weights;
}

}  // namespace

void Model::update_batch_norm(const Dataset& data, std::int64_t batch_size) {
  ACCRUE_CHECK(batch_size >= 1, "update_batch_norm: batch_size must be at least 1, got {}", batch_size);
  ACCRUE_CHECK(!data.empty(), "update_batch_norm: the dataset '{}' is empty", data.name());
  if (!built_) build(data.sample_shape());
  std::vector<layers::BatchNorm*> norms;
  for (auto& l : layers_)
    l->for_each_layer([&](Layer& inner) {
      if (auto* bn = dynamic_cast<layers::BatchNorm*>(&inner)) norms.push_back(bn);
    });
  if (norms.empty()) return;
  const NoGradGuard no_grad;
  const TrainingModeGuard training{*this, true};  // as torch's update_bn: model.train(), dropout too
  for (layers::BatchNorm* bn : norms) bn->recompute_statistics(true);
  try {
    const DataLoader loader{data, {.batch_size = batch_size}};
    DeviceBatches batches{loader, device_};
    for (std::int64_t b = 0; b < loader.size(); ++b)
      forward(batches.get(b, b + 1 < loader.size() ? std::optional{b + 1} : std::nullopt).inputs);
  } catch (...) {
    for (layers::BatchNorm* bn : norms) bn->recompute_statistics(false);
    throw;
  }
  for (layers::BatchNorm* bn : norms) bn->recompute_statistics(false);
}

Evaluation Model::evaluate(const Dataset& given, const EvaluateOptions& options) {
  check_compiled("evaluate()");
  const Dataset data = arrange(given, "evaluate");
  ACCRUE_CHECK(options.batch_size >= 1, "evaluate: batch_size must be at least 1, got {}", options.batch_size);
  ACCRUE_CHECK(!data.empty(), "evaluate: the dataset '{}' is empty", data.name());
  const NoGradGuard no_grad;
  const EvaluationScope evaluation;
  const std::unique_ptr<distributed::Communicator> alone = distributed::single_process();
  metrics::MeanLoss loss;
  std::vector<Metric> metrics = metrics_;  // copies: evaluation leaves the training metrics alone
  for (Metric& m : metrics) m.reset();
  distributed::Communicator& processes = options.distributed ? distributed::world() : *alone;
  const DataLoader loader{data, {.batch_size = options.batch_size, .shard = processes.rank(), .shards = processes.size()}};
  // Data not in memory is read ahead on background threads, as fit reads it; a GPU gets the next
  // batch copied while this one runs.
  DeviceBatches batches{loader, device_};
  for (std::int64_t b = 0; b < loader.size(); ++b) {
    // Inside fit, SIGINT and SIGTERM stop a long validation between batches (fit writes the
    // checkpoint); processes that evaluate together finish the pass, as they must agree.
    if (const int signal = pending_stop_signal(); signal != 0 && processes.size() == 1)
      throw Interrupted(fmt::format("evaluating '{}' stopped by {} before batch {}/{}", data.name(), signal_name(signal),
                                    b + 1, loader.size()),
                        signal);
    const Batch batch = batches.get(b, b + 1 < loader.size() ? std::optional{b + 1} : std::nullopt);
    if (batch.size() == 0) continue;  // this process's share of a short last batch
    try {
      const std::vector<Tensor> predictions = forward(batch.inputs);
      std::vector<double> sums;
      for (const Tensor& sum : loss_sums(predictions, batch.targets, batch_weights(loader.dataset(), batch))) sums.push_back(sum.item());
      const auto [logged, logged_units] = logged_loss(sums, loss_units(batch.targets), batch.size());
      loss.add(logged, logged_units);
      update_metrics(metrics, predictions, batch.targets, sums);
    } catch (Error& e) {
      e.prepend(fmt::format("evaluating '{}', batch {}/{}: ", data.name(), b + 1, loader.size()));
      throw;
    }
  }
  sum_over_processes(processes, loss, metrics);
  Evaluation result;
  result.loss = loss.result();
  result.logs = metric_logs(loss, metrics);
  return result;
}

}  // namespace accrue
