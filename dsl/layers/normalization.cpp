#include "normalization.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>

#include "../../framework/autograd/autograd.hpp"
#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

Normalization::Normalization(NormalizationOptions options) : options_(std::move(options)) {
  if (!options_.name.empty()) set_name(options_.name);
  ACCRUE_CHECK(options_.mean.size() == options_.variance.size(),
               "Normalization: {} means and {} variances; give one of each per feature, or neither", options_.mean.size(),
               options_.variance.size());
  for (const float v : options_.variance)
    ACCRUE_CHECK(v >= 0.0f && std::isfinite(v), "Normalization: a variance of {} (variances are finite, not negative)", v);
  mean_ = std::exchange(options_.mean, {});
  variance_ = std::exchange(options_.variance, {});
}

int Normalization::resolved_axis(int rank) const {
  const int axis = options_.axis < 0 ? rank + options_.axis : options_.axis;
  ACCRUE_CHECK_SHAPE(axis >= 0 && axis < rank, "Normalization: axis {} does not exist in samples of rank {}",
                     options_.axis, rank);
  return axis;
}

Shape Normalization::statistics_shape(const Shape& sample) const {
  const int axis = resolved_axis(sample.rank());
  Shape s = sample;
  for (int d = 0; d < s.rank(); ++d)
    if (d != axis) s[d] = 1;
  return s;
}

Shape Normalization::build(const Shape& input_shape, Generator& /*generator*/) {
  const Shape stats = statistics_shape(input_shape);
  const TensorOptions buffer{.category = MemoryCategory::parameters};
  if (adapted()) {
    ACCRUE_CHECK_SHAPE(static_cast<std::int64_t>(mean_.size()) == stats.numel(),
                       "Normalization: adapted to {} features, but the samples {} have {} along axis {}", mean_.size(),
                       input_shape, stats.numel(), options_.axis);
    add_buffer("mean", Tensor::from(mean_, stats, buffer));
    add_buffer("variance", Tensor::from(variance_, stats, buffer));
  } else {
    // Not adapted yet: the identity until adapt() or load_weights() gives the statistics.
    add_buffer("mean", Tensor::zeros(stats, buffer));
    add_buffer("variance", Tensor::ones(stats, buffer));
  }
  return input_shape;
}

Tensor Normalization::forward(const Tensor& x) {
  const Tensor& mean = named_buffers().at(0).second;
  const Tensor& variance = named_buffers().at(1).second;
  // Keras's: a feature that never varies is divided by 1e-7, not by zero.
  return ops::div(ops::sub(x, mean), ops::clamp(ops::sqrt(variance), 1e-7f, FLT_MAX));
}

void Normalization::accumulate(const Tensor& batch, std::vector<double>& sum, std::vector<double>& squares,
                               std::int64_t& count) const {
  const Shape sample = batch.shape().drop_front();
  const int axis = resolved_axis(sample.rank());
  const std::int64_t features = sample[axis];
  std::int64_t inner = 1;
  for (int d = axis + 1; d < sample.rank(); ++d) inner *= sample[d];
  if (sum.empty()) sum.assign(static_cast<std::size_t>(features), 0.0), squares = sum;
  ACCRUE_CHECK_SHAPE(static_cast<std::int64_t>(sum.size()) == features,
                     "Normalization.adapt: samples of shape {} after samples with {} features", sample, sum.size());
  const std::vector<float> v = ops::cast(batch.to(Device::cpu()), DType::f32).to_vector<float>();
  for (std::size_t k = 0; k < v.size(); ++k) {
    const auto f = static_cast<std::size_t>((static_cast<std::int64_t>(k) / inner) % features);
    sum[f] += v[k];
    squares[f] += static_cast<double>(v[k]) * v[k];
  }
  count += batch.size(0) * (sample.numel() / features);
}

// The population variance, as Keras's adapt: E[x^2] - E[x]^2 in double.
void Normalization::set_statistics(const std::vector<double>& sum, const std::vector<double>& squares,
                                   std::int64_t count) {
  mean_.resize(sum.size());
  variance_.resize(sum.size());
  for (std::size_t f = 0; f < sum.size(); ++f) {
    const double m = sum[f] / static_cast<double>(count);
    mean_[f] = static_cast<float>(m);
    variance_[f] = static_cast<float>(std::max(0.0, squares[f] / static_cast<double>(count) - m * m));
  }
  if (!built()) return;
  // Built already (adapt on the model's layer): the buffers take the new values.
  const NoGradGuard no_grad;
  Tensor m = named_buffers().at(0).second, v = named_buffers().at(1).second;  // handles of the buffers' storage
  ACCRUE_CHECK_SHAPE(static_cast<std::int64_t>(mean_.size()) == m.numel(),
                     "Normalization.adapt: {} features, the built layer has {}", mean_.size(), m.numel());
  m.copy_(Tensor::from(mean_, m.shape()).to(m.device()));
  v.copy_(Tensor::from(variance_, v.shape()).to(v.device()));
}

void Normalization::adapt(const Tensor& samples) {
  ACCRUE_CHECK_SHAPE(samples.rank() >= 2 && samples.size(0) > 0,
                     "Normalization.adapt: needs a batch of samples (N, ...), got {}", samples.shape());
  std::vector<double> sum, squares;
  std::int64_t count = 0;
  accumulate(samples, sum, squares, count);
  set_statistics(sum, squares, count);
}

void Normalization::adapt(const Dataset& data) {
  ACCRUE_CHECK(data.size() > 0, "Normalization.adapt: dataset '{}' is empty", data.name());
  std::vector<double> sum, squares;
  std::int64_t count = 0;
  constexpr std::int64_t batch = 1024;
  for (std::int64_t begin = 0; begin < data.size(); begin += batch)
    accumulate(data.slice(begin, std::min(data.size(), begin + batch)).input(), sum, squares, count);
  set_statistics(sum, squares, count);
}

std::vector<float> Normalization::mean() const {
  return built() ? named_buffers().at(0).second.to(Device::cpu()).to_vector<float>() : mean_;
}

std::vector<float> Normalization::variance() const {
  return built() ? named_buffers().at(1).second.to(Device::cpu()).to_vector<float>() : variance_;
}

Layer::ImageSizes Normalization::image_sizes() const {
  const bool per_channel = built() && input_shape().rank() == 3 && resolved_axis(3) == 0;
  return per_channel ? ImageSizes::follows : ImageSizes::fixed;
}

LayerConfig Normalization::config() const { return {{"axis", std::int64_t{options_.axis}}}; }

// (x - mean) / max(sqrt(variance), 1e-7), the divisor computed here as forward computes it.
std::string Normalization::to_onnx(onnx::Graph& g, const std::string& x) const {
  const Tensor& mean = named_buffers().at(0).second;
  std::vector<float> divisor = named_buffers().at(1).second.to_vector<float>();
  for (float& v : divisor) v = std::clamp(std::sqrt(v), 1e-7f, FLT_MAX);
  const Shape& s = mean.shape();
  return g.node("Div", {g.node("Sub", {x, g.weight("mean", mean)}),
                        g.weight("std", std::move(divisor), std::vector<std::int64_t>(s.begin(), s.end()))});
}

}  // namespace accrue::layers
