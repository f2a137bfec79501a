#include "accrue/dsl/loss.hpp"

namespace accrue {
namespace losses {

Tensor CrossEntropy::per_sample(const Tensor& logits, const Tensor& labels) const {
  return ops::cross_entropy(logits, labels, Reduction::none, label_smoothing);
}

Tensor CrossEntropy::operator()(const Tensor& logits, const Tensor& labels) const {
  return ops::cross_entropy(logits, labels, reduction, label_smoothing);
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
