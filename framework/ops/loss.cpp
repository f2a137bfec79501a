// Loss functions as ops: fused softmax cross-entropy, and squared error composed from other ops.

#include <algorithm>

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../../kernels/cross_entropy.hpp"

namespace accrue::ops {
namespace {

class CrossEntropyNode final : public Node {
 public:
  CrossEntropyNode(const Tensor& logits, const Tensor& labels, const Tensor& lse, float smoothing, std::int64_t ignore)
      : logits_(logits), labels_(labels), lse_(lse), smoothing_(smoothing), ignore_(ignore) {}
  std::string_view name() const override { return "cross_entropy"; }
  void backward(Tensor grad, GradSink& sink) override {
    auto [dx, accumulate] = sink.target(0);
    kernels::cross_entropy_backward(logits_.get(name()), labels_.get(name()), smoothing_, ignore_, lse_.get(name()), grad,
                                    dx, accumulate);
  }
  void release() override {
    logits_.reset();
    labels_.reset();
    lse_.reset();
  }

 private:
  SavedTensor logits_, labels_, lse_;
  float smoothing_;
  std::int64_t ignore_;
};

Tensor reduce(const Tensor& per_element, Reduction reduction) {
  switch (reduction) {
    case Reduction::mean: return mean(per_element);
    case Reduction::sum: return sum(per_element);
    case Reduction::none: return per_element;
  }
  return per_element;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits_in, const Tensor& labels, Reduction reduction, float label_smoothing,
                     std::int64_t ignore_index) {
  ACCRUE_CHECK(logits_in.defined() && labels.defined(), "cross_entropy: the logits or the labels are undefined");
  ACCRUE_CHECK(is_floating(logits_in.dtype()), "cross_entropy: logits must be floating-point, got {}",
               dtype_name(logits_in.dtype()));
  const Tensor logits = float32(logits_in);  // the loss is computed in float32, as autocast does
  ACCRUE_CHECK(labels.dtype() == DType::i32,
               "cross_entropy: labels must be int32 class indices, got {} (for probabilities, write the loss from "
               "log_softmax)",
               dtype_name(labels.dtype()));
  ACCRUE_CHECK_SHAPE(logits.rank() >= 2, "cross_entropy: logits must be (batch, ..., classes), got {}", logits.shape());
  ACCRUE_CHECK_SHAPE(labels.shape() == logits.shape().drop_back(),
                     "cross_entropy: {} labels of shape {} for logits of shape {}; expected one label per row, {}",
                     labels.numel(), labels.shape(), logits.shape(), logits.shape().drop_back());
  ACCRUE_CHECK(label_smoothing >= 0.0f && label_smoothing <= 1.0f,
               "cross_entropy: label_smoothing must be in [0, 1], got {}", label_smoothing);
  // Rows of (..., C) folded into (rows, C); the losses come back in the labels' shape.
  const std::int64_t C = logits.size(-1), rows = labels.numel();
  const Tensor rows_of_logits = reshape(logits, {rows, C}), rows_of_labels = labels.view_as_shape({rows});
  Tensor loss = Tensor::empty({rows}, {.device = logits.device()});
  Tensor lse = Tensor::empty({rows}, {.device = logits.device()});
  kernels::cross_entropy_forward(rows_of_logits, rows_of_labels, label_smoothing, ignore_index, loss, lse);
  if (needs_grad({&rows_of_logits}))
    record(std::make_shared<CrossEntropyNode>(rows_of_logits, rows_of_labels, lse, label_smoothing, ignore_index), loss,
           {&rows_of_logits});
  loss = reshape(loss, labels.shape());
  if (reduction != Reduction::mean) return reduce(loss, reduction);
  // The mean over the labels that count, as PyTorch's.
  const std::vector<std::int32_t> y = labels.to(Device::cpu()).to_vector<std::int32_t>();
  const auto counted = std::count_if(y.begin(), y.end(), [&](std::int32_t v) { return v != ignore_index; });
  return sum(loss) * (1.0f / static_cast<float>(counted));
}

Tensor mse_loss(const Tensor& prediction, const Tensor& target, Reduction reduction) {
  ACCRUE_CHECK(prediction.defined() && target.defined(), "mse_loss: the prediction or the target is undefined");
  ACCRUE_CHECK_SHAPE(prediction.shape() == target.shape(), "mse_loss: prediction of shape {} against target of shape {}",
                     prediction.shape(), target.shape());
  return reduce(square(prediction - target), reduction);
}

}  // namespace accrue::ops
