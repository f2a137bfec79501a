#include "metrics.hpp"

#include "../framework/distributed/communicator.hpp"

#include "../framework/autograd/autograd.hpp"
#include "../framework/ops/ops.hpp"

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
  // A negative label (CrossEntropy's ignore_index, -100) is a sample without one: not counted.
  for (std::size_t i = 0; i < labels.size(); ++i) {
    correct_ += predicted[i] == labels[i] ? 1 : 0;
    total_ += labels[i] >= 0 ? 1 : 0;
  }
}

void MeanLoss::update(const Tensor& prediction, const Tensor& /*target*/, double loss_sum) {
  add(loss_sum, prediction.rank() >= 1 ? prediction.size(0) : 1);
}

void MeanLoss::add(double loss_sum, std::int64_t units) {
  sum_ += loss_sum;
  count_ += units;
}

}  // namespace accrue::metrics

namespace accrue {

namespace metrics {

std::int64_t saved_count(double v, std::string_view metric) {
  ACCRUE_CHECK(v >= 0.0 && v <= 9007199254740992.0 && v == static_cast<double>(static_cast<std::int64_t>(v)),
               "{}: saved count {} is not a whole number >= 0", metric, v);
  return static_cast<std::int64_t>(v);
}

void Accuracy::load_state(const std::vector<double>& state) {
  ACCRUE_CHECK(state.size() == 2, "accuracy: a saved state has 2 values (correct, total), got {}", state.size());
  const std::int64_t correct = saved_count(state[0], "accuracy"), total = saved_count(state[1], "accuracy");
  ACCRUE_CHECK(correct <= total, "accuracy: saved state has {} correct of {}", correct, total);
  correct_ = correct;
  total_ = total;
}

void MeanLoss::load_state(const std::vector<double>& state) {
  ACCRUE_CHECK(state.size() == 2, "loss: a saved state has 2 values (sum, count), got {}", state.size());
  count_ = saved_count(state[1], "loss");
  sum_ = state[0];
}

}  // namespace metrics

LogDirections log_directions(const std::vector<Metric>& metrics) {
  LogDirections directions;
  for (const std::string prefix : {"", "val_"}) {
    directions.set(prefix + "loss", Direction::lower);
    for (const Metric& m : metrics)
      if (const auto d = m.direction()) directions.set(prefix + m.name(), *d);
  }
  return directions;
}

Logs metric_logs(const metrics::MeanLoss& loss, const std::vector<Metric>& metrics, const std::string& prefix) {
  Logs logs;
  logs.set(prefix + "loss", loss.result());
  for (const Metric& m : metrics) {
    if (std::optional<CountTable> table = m.table()) logs.set_table(prefix + m.name(), std::move(*table));
    else logs.set(prefix + m.name(), m.result());
  }
  return logs;
}

void sum_over_processes(distributed::Communicator& communicator, metrics::MeanLoss& loss, std::vector<Metric>& metrics) {
  if (communicator.size() == 1) return;
  std::vector<double> sums = loss.state();
  for (const Metric& m : metrics)
    if (const auto s = m.state()) sums.insert(sums.end(), s->begin(), s->end());
  communicator.allreduce_sum(sums);
  std::size_t at = 0;
  const auto take = [&](std::size_t n) {
    std::vector<double> part(sums.begin() + static_cast<std::ptrdiff_t>(at),
                             sums.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    return part;
  };
  loss.load_state(take(loss.state().size()));
  for (Metric& m : metrics)
    if (const auto s = m.state()) m.load_state(take(s->size()));
}

}  // namespace accrue
