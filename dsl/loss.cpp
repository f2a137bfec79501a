#include "accrue/dsl/loss.hpp"

#include <numeric>

#include "accrue/dsl/layer_registry.hpp"

namespace accrue {
namespace losses {

namespace {

ConfigValue reduction_option(Reduction r) {
  return std::string{r == Reduction::mean ? "mean" : r == Reduction::sum ? "sum" : "none"};
}

Reduction reduction_of(const ConfigReader& c) {
  const std::string r = c.text("reduction");
  if (r == "mean") return Reduction::mean;
  if (r == "sum") return Reduction::sum;
  if (r == "none") return Reduction::none;
  throw ValueError(fmt::format("{}: reduction '{}' is none of mean, sum, none", c.type(), r));
}

}  // namespace

LayerConfig CrossEntropy::config() const {
  return {{"reduction", reduction_option(reduction)},
          {"label_smoothing", float_option(label_smoothing)},
          {"ignore_index", ignore_index}};
}

CrossEntropy CrossEntropy::from_config(const ConfigReader& c) {
  return {.reduction = reduction_of(c), .label_smoothing = c.real("label_smoothing"), .ignore_index = c.integer("ignore_index")};
}

LayerConfig MSE::config() const { return {{"reduction", reduction_option(reduction)}}; }

MSE MSE::from_config(const ConfigReader& c) { return {.reduction = reduction_of(c)}; }

Tensor CrossEntropy::per_sample(const Tensor& logits, const Tensor& labels) const {
  const Tensor values = ops::cross_entropy(logits, labels, Reduction::none, label_smoothing, ignore_index);
  return values.rank() <= 1 ? values : ops::sum(ops::flatten(values, 1), 1);
}

std::vector<std::int64_t> CrossEntropy::counts(const Tensor& labels) const {
  // Labels the loss refuses (not int32) count once each here; the loss says what is wrong with
  // them, at the batch where it meets them.
  if (labels.dtype() != DType::i32 || labels.rank() == 0)
    return std::vector<std::int64_t>(static_cast<std::size_t>(labels.rank() >= 1 ? labels.size(0) : 1), 1);
  const std::vector<std::int32_t> y = labels.to(Device::cpu()).to_vector<std::int32_t>();
  const std::size_t B = static_cast<std::size_t>(labels.size(0)), per = B == 0 ? 0 : y.size() / B;
  std::vector<std::int64_t> out(B, 0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < per; ++t) out[b] += y[b * per + t] != ignore_index ? 1 : 0;
  return out;
}

Tensor CrossEntropy::operator()(const Tensor& logits, const Tensor& labels) const {
  return ops::cross_entropy(logits, labels, reduction, label_smoothing, ignore_index);
}

Tensor MSE::per_sample(const Tensor& prediction, const Tensor& target) const {
  ACCRUE_CHECK_SHAPE(prediction.shape() == target.shape(), "MSE: prediction of shape {} against target of shape {}",
                     prediction.shape(), target.shape());
  ACCRUE_CHECK_SHAPE(prediction.rank() >= 1, "MSE: needs a batch dimension, got shape {}", prediction.shape());
  const Tensor squared = ops::square(prediction - target);
  if (squared.rank() == 1) return squared;
  return ops::mean(ops::flatten(squared, 1), 1);
}

Tensor MSE::operator()(const Tensor& prediction, const Tensor& target) const {
  return ops::mse_loss(prediction, target, reduction);
}

}  // namespace losses

std::vector<std::int64_t> Loss::counts(const Tensor& targets) const {
  if (counts_) return counts_(targets);
  return std::vector<std::int64_t>(static_cast<std::size_t>(targets.rank() >= 1 ? targets.size(0) : 1), 1);
}

std::int64_t Loss::units(const Tensor& targets) const {
  const std::vector<std::int64_t> c = counts(targets);
  return std::accumulate(c.begin(), c.end(), std::int64_t{0});
}

Tensor Loss::batch_sum(const Tensor& prediction, const Tensor& target) const {
  ACCRUE_CHECK(defined(), "no loss: compile() the model with one");
  const Tensor values = per_sample_(prediction, target);
  ACCRUE_CHECK(values.defined(), "loss {} returned an undefined tensor", name_);
  const std::int64_t B = prediction.rank() >= 1 ? prediction.size(0) : 1;
  if (values.rank() == 1 && values.size(0) == B) return ops::sum(values);
  if (values.numel() == 1) return ops::reshape(values, Shape{}) * static_cast<float>(B);
  throw ShapeError(fmt::format("loss {} returned shape {} for a batch of {}: expected one value per sample ({}) or a "
                               "scalar mean",
                               name_, values.shape(), B, Shape{B}));
}

}  // namespace accrue
