#include "accrue/dsl/metrics.hpp"

#include "accrue/framework/autograd.hpp"
#include "accrue/framework/ops.hpp"

namespace accrue::metrics {

void Accuracy::update(const Tensor& prediction, const Tensor& target, double /*loss_sum*/) {
  const NoGradGuard no_grad;
  ACCRUE_CHECK_SHAPE(prediction.rank() == 2 && prediction.size(1) > 1,
                     "accuracy: needs class scores (batch, classes), got {}", prediction.shape());
  ACCRUE_CHECK(target.dtype() == DType::i32 && target.rank() == 1 && target.size(0) == prediction.size(0),
               "accuracy: needs one int32 label per sample, got {} of dtype {} for predictions {}", target.shape(),
               dtype_name(target.dtype()), prediction.shape());
  const std::vector<std::int32_t> predicted = ops::argmax(prediction).to_vector<std::int32_t>();
  const std::vector<std::int32_t> labels = target.to_vector<std::int32_t>();
  for (std::size_t i = 0; i < labels.size(); ++i) correct_ += predicted[i] == labels[i] ? 1 : 0;
  total_ += static_cast<std::int64_t>(labels.size());
}

void MeanLoss::update(const Tensor& prediction, const Tensor& /*target*/, double loss_sum) {
  sum_ += loss_sum;
  count_ += prediction.rank() >= 1 ? prediction.size(0) : 1;
}

}  // namespace accrue::metrics

namespace accrue {

Logs metric_logs(const metrics::MeanLoss& loss, const std::vector<Metric>& metrics, const std::string& prefix) {
  Logs logs;
  logs.set(prefix + "loss", loss.result());
  for (const Metric& m : metrics) logs.set(prefix + m.name(), m.result());
  return logs;
}

}  // namespace accrue
