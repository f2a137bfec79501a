// evaluate(): mean loss and metrics over a dataset, without recording autograd.

#include <cmath>

#include "accrue/datasets/loader.hpp"
#include "accrue/dsl/sequential.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/ops.hpp"

namespace accrue {


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
    const Batch host = loader[b];
    const Batch batch{host.inputs.to(device_), host.targets.to(device_), host.index};
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
  result.logs = metric_logs(loss, metrics);
  return result;
}

}  // namespace accrue
