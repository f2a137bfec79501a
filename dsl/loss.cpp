#include "loss.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "layer_registry.hpp"

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

// Per-sample means of `elements` (B, ...): (B) as it is, else the mean over the rest.
Tensor mean_per_sample(const Tensor& elements) {
  return elements.rank() == 1 ? elements : ops::mean(ops::flatten(elements, 1), 1);
}

// The reduced loss of per-sample values, as the PyTorch losses reduce theirs.
Tensor reduced(const Tensor& per_sample, Reduction reduction) {
  if (reduction == Reduction::none) return per_sample;
  return reduction == Reduction::sum ? ops::sum(per_sample) : ops::mean(per_sample);
}

// Predictions and float targets of one shape, from targets of that shape or int32 labels (B) for
// predictions (B, 1); names the loss and both shapes otherwise.
Tensor float_targets(const std::string& loss, const Tensor& prediction, const Tensor& target) {
  ACCRUE_CHECK_SHAPE(prediction.rank() >= 1, "{}: needs a batch dimension, got shape {}", loss, prediction.shape());
  Tensor t = target;
  if (target.dtype() == DType::i32) {  // labels: the values as floats, on the prediction's device
    const std::vector<std::int32_t> v = target.to(Device::cpu()).to_vector<std::int32_t>();
    t = Tensor::from(std::vector<float>(v.begin(), v.end()), target.shape()).to(prediction.device());
  } else if (target.dtype() != DType::f32) {
    t = ops::cast(target, DType::f32);
  }
  if (t.shape() != prediction.shape() && prediction.rank() == 2 && prediction.size(1) == 1 && t.rank() == 1 &&
      t.size(0) == prediction.size(0))
    t = ops::reshape(t, prediction.shape());
  ACCRUE_CHECK_SHAPE(t.shape() == prediction.shape(), "{}: prediction of shape {} against target of shape {}", loss,
                     prediction.shape(), target.shape());
  return t;
}

// log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|)).
Tensor softplus(const Tensor& x) { return ops::relu(x) + ops::log(1.0f + ops::exp(-ops::abs(x))); }

constexpr float keras_epsilon = 1e-7f;

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

LayerConfig BinaryCrossEntropy::config() const {
  return {{"reduction", reduction_option(reduction)},
          {"from_logits", from_logits},
          {"label_smoothing", float_option(label_smoothing)},
          {"pos_weight", float_option(pos_weight)}};
}

BinaryCrossEntropy BinaryCrossEntropy::from_config(const ConfigReader& c) {
  return {.reduction = reduction_of(c), .from_logits = c.flag("from_logits"), .label_smoothing = c.real("label_smoothing"),
          .pos_weight = c.real("pos_weight")};
}

LayerConfig Huber::config() const { return {{"reduction", reduction_option(reduction)}, {"delta", float_option(delta)}}; }

Huber Huber::from_config(const ConfigReader& c) { return {.reduction = reduction_of(c), .delta = c.real("delta")}; }

LayerConfig KLDivergence::config() const {
  return {{"reduction", reduction_option(reduction)}, {"from_logits", from_logits}};
}

KLDivergence KLDivergence::from_config(const ConfigReader& c) {
  return {.reduction = reduction_of(c), .from_logits = c.flag("from_logits")};
}

Tensor BinaryCrossEntropy::per_sample(const Tensor& prediction, const Tensor& target) const {
  ACCRUE_CHECK(label_smoothing >= 0.0f && label_smoothing <= 1.0f && pos_weight >= 0.0f,
               "BinaryCrossEntropy: label_smoothing must be in [0, 1] and pos_weight >= 0, got {} and {}", label_smoothing,
               pos_weight);
  Tensor y = float_targets(name(), prediction, target);
  if (label_smoothing > 0.0f) y = ops::affine(y, 1.0f - label_smoothing, 0.5f * label_smoothing);
  // -log p and -log(1 - p): softplus(-x) and softplus(x) from logits x.
  const Tensor neg_log_p = from_logits ? softplus(-prediction)
                                       : -ops::log(ops::clamp(prediction, keras_epsilon, 1.0f - keras_epsilon));
  const Tensor neg_log_q = from_logits ? softplus(prediction)
                                       : -ops::log(1.0f - ops::clamp(prediction, keras_epsilon, 1.0f - keras_epsilon));
  const Tensor positive = pos_weight == 1.0f ? y * neg_log_p : (pos_weight * y) * neg_log_p;
  return mean_per_sample(positive + (1.0f - y) * neg_log_q);
}

Tensor BinaryCrossEntropy::operator()(const Tensor& prediction, const Tensor& target) const {
  return reduced(per_sample(prediction, target), reduction);
}

Tensor Huber::per_sample(const Tensor& prediction, const Tensor& target) const {
  ACCRUE_CHECK(delta > 0.0f, "Huber: delta must be > 0, got {}", delta);
  const Tensor error = ops::abs(prediction - float_targets(name(), prediction, target));
  const Tensor inside = ops::clamp(error, 0.0f, delta);
  // 0.5 e^2 within delta; beyond, 0.5 delta^2 + delta (e - delta) = delta (e - delta / 2).
  return mean_per_sample(0.5f * ops::square(inside) + delta * (error - inside));
}

Tensor Huber::operator()(const Tensor& prediction, const Tensor& target) const {
  return reduced(per_sample(prediction, target), reduction);
}

Tensor KLDivergence::per_sample(const Tensor& prediction, const Tensor& target) const {
  ACCRUE_CHECK_SHAPE(prediction.rank() >= 2, "KLDivergence: needs distributions over the last dimension, (B, C); got {}",
                     prediction.shape());
  const Tensor t = ops::clamp(float_targets(name(), prediction, target), keras_epsilon, 1.0f);
  const Tensor log_p = from_logits ? ops::log_softmax(prediction, -1) : ops::log(ops::clamp(prediction, keras_epsilon, 1.0f));
  return mean_per_sample(ops::sum(t * (ops::log(t) - log_p), -1));
}

Tensor KLDivergence::operator()(const Tensor& prediction, const Tensor& target) const {
  return reduced(per_sample(prediction, target), reduction);
}

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

// Targets (B) against predictions (B, 1) are taken as (B, 1), as Keras does.
Tensor MSE::per_sample(const Tensor& prediction, const Tensor& target) const {
  return mean_per_sample(ops::square(prediction - float_targets(name(), prediction, target)));
}

Tensor MSE::operator()(const Tensor& prediction, const Tensor& target) const {
  return ops::mse_loss(prediction, float_targets(name(), prediction, target), reduction);
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

Tensor Loss::weighted_sum(const Tensor& prediction, const Tensor& target, std::span<const float> weights) const {
  ACCRUE_CHECK(defined(), "no loss: compile() the model with one");
  const Tensor values = per_sample_(prediction, target);
  ACCRUE_CHECK(values.defined(), "loss {} returned an undefined tensor", name_);
  const std::int64_t B = prediction.rank() >= 1 ? prediction.size(0) : 1;
  ACCRUE_CHECK_SHAPE(values.rank() == 1 && values.size(0) == B,
                     "loss {} returned shape {} for a batch of {}: sample weights need one value per sample ({})", name_,
                     values.shape(), B, Shape{B});
  ACCRUE_CHECK_SHAPE(static_cast<std::int64_t>(weights.size()) == B, "loss {}: {} sample weights for a batch of {}", name_,
                     weights.size(), B);
  Tensor w = Tensor::from(weights, Shape{B}, {.device = values.device()});
  if (values.dtype() != DType::f32) w = ops::cast(w, values.dtype());
  return ops::sum(values * w);
}

std::vector<float> class_weight_per_sample(const Tensor& targets, const std::map<std::int64_t, float>& class_weight) {
  for (const auto& [c, w] : class_weight)
    ACCRUE_CHECK(std::isfinite(w) && w >= 0.0f, "class_weight: class {}'s weight is {} (weights must be finite and >= 0)",
                 c, w);
  const Tensor y = targets.to(Device::cpu());
  const bool labels = y.rank() == 1 || (y.rank() == 2 && y.size(1) == 1);
  ACCRUE_CHECK(labels || (y.rank() == 2 && y.dtype() != DType::i32),
               "class_weight: needs one class per sample, as int32 labels (N), values (N, 1) or one-hot rows (N, C); "
               "the targets are {} {} (for a class per token, weigh samples with Dataset::with_sample_weights)",
               dtype_name(y.dtype()), y.shape());
  const std::size_t n = static_cast<std::size_t>(y.size(0));
  std::vector<std::int64_t> classes(n);
  if (y.dtype() == DType::i32) {
    const std::vector<std::int32_t> v = y.to_vector<std::int32_t>();
    for (std::size_t i = 0; i < n; ++i) classes[i] = v[i];
  } else {
    const std::vector<float> v = (y.dtype() == DType::f32 ? y : ops::cast(y, DType::f32)).to_vector<float>();
    const std::size_t row = n == 0 ? 0 : v.size() / n;
    for (std::size_t i = 0; i < n; ++i) {
      const float* r = v.data() + i * row;
      classes[i] = labels ? std::llround(r[0]) : std::max_element(r, r + row) - r;
    }
  }
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto it = class_weight.find(classes[i]);
    out[i] = it == class_weight.end() ? 1.0f : it->second;
  }
  return out;
}

std::string class_weight_str(const std::map<std::int64_t, float>& class_weight) {
  std::string s;
  for (const auto& [c, w] : class_weight) s += fmt::format("{}{}: {:g}", s.empty() ? "" : ", ", c, w);
  return "{" + s + "}";
}

}  // namespace accrue
