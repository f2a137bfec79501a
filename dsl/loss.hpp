#pragma once
// Losses for compile(). A loss gives the sum of its per-sample values over a batch; the training
// loop divides by the number of samples that take part in the optimizer step (or not, for
// Reduction::sum), so the gradient is that of the mean over exactly those samples.
//
// Any callable `(const Tensor& prediction, const Tensor& target) -> Tensor` is a loss too:
// returning per-sample values (B) is exact under every batching; returning a scalar is read as
// the mean over its batch.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "layer.hpp"
#include "../framework/ops/ops.hpp"

namespace accrue {

namespace losses {

/// Softmax cross-entropy from logits (B, C) and int32 labels (B), or over sequences, logits
/// (B, T, V) and labels (B, T): PyTorch's nn.CrossEntropyLoss with the classes last. Labels equal
/// to ignore_index (padding) count for nothing. Over sequences the mean is per counted token: in
/// training, each micro-batch is weighted by one over the tokens counted in its whole window.
struct CrossEntropy {
  Reduction reduction = Reduction::mean;
  float label_smoothing = 0.0f;
  std::int64_t ignore_index = -100;

  /// Per-sample losses (B): over sequences, the sum over the sample's tokens.
  Tensor per_sample(const Tensor& logits, const Tensor& labels) const;
  /// Labels each sample counts (not ignore_index): its tokens, or 1 for a class label.
  std::vector<std::int64_t> counts(const Tensor& labels) const;
  /// The reduced loss, as nn.CrossEntropyLoss(...)(logits, labels).
  Tensor operator()(const Tensor& logits, const Tensor& labels) const;
  std::string name() const { return "CrossEntropy"; }
  /// Its options, which a saved model keeps (Model::save).
  LayerConfig config() const;
  static CrossEntropy from_config(const ConfigReader& c);
};

/// Mean squared error, per sample the mean over its elements: PyTorch's nn.MSELoss. Targets (B)
/// against predictions (B, 1) are taken as (B, 1), as Keras does; int32 targets as floats.
struct MSE {
  Reduction reduction = Reduction::mean;

  Tensor per_sample(const Tensor& prediction, const Tensor& target) const;
  Tensor operator()(const Tensor& prediction, const Tensor& target) const;
  std::string name() const { return "MSE"; }
  LayerConfig config() const;
  static MSE from_config(const ConfigReader& c);
};

/// Binary cross-entropy, Keras's BinaryCrossentropy: predictions (B, ...) and float targets in
/// [0, 1] of the same shape (or int32 labels 0/1 of shape (B) for predictions (B, 1)); per sample
/// the mean over its elements of -(w y log p + (1 - y) log(1 - p)). from_logits takes logits (a
/// stable log-sigmoid, PyTorch's BCEWithLogitsLoss), otherwise probabilities clipped to
/// [1e-7, 1 - 1e-7] as Keras does; label_smoothing moves targets to y (1 - s) + s / 2; pos_weight w
/// weighs the positive term (BCEWithLogitsLoss's pos_weight, one for every output).
struct BinaryCrossEntropy {
  Reduction reduction = Reduction::mean;
  bool from_logits = false;
  float label_smoothing = 0.0f;
  float pos_weight = 1.0f;

  Tensor per_sample(const Tensor& prediction, const Tensor& target) const;
  Tensor operator()(const Tensor& prediction, const Tensor& target) const;
  std::string name() const { return "BinaryCrossEntropy"; }
  LayerConfig config() const;
  static BinaryCrossEntropy from_config(const ConfigReader& c);
};

/// Huber loss, Keras's Huber and PyTorch's HuberLoss: per element 0.5 e^2 where |e| <= delta and
/// delta (|e| - delta / 2) beyond; per sample the mean over its elements.
struct Huber {
  Reduction reduction = Reduction::mean;
  float delta = 1.0f;

  Tensor per_sample(const Tensor& prediction, const Tensor& target) const;
  Tensor operator()(const Tensor& prediction, const Tensor& target) const;
  std::string name() const { return "Huber"; }
  LayerConfig config() const;
  static Huber from_config(const ConfigReader& c);
};

/// Kullback-Leibler divergence, Keras's KLDivergence: targets and predictions are distributions
/// over the last dimension, both clipped to [1e-7, 1]; per sample sum(t log(t / p)) over it (the
/// mean over any dimensions between). from_logits takes logits and a log-softmax of them (PyTorch's
/// KLDivLoss with reduction 'batchmean' on log_softmax(prediction)).
struct KLDivergence {
  Reduction reduction = Reduction::mean;
  bool from_logits = false;

  Tensor per_sample(const Tensor& prediction, const Tensor& target) const;
  Tensor operator()(const Tensor& prediction, const Tensor& target) const;
  std::string name() const { return "KLDivergence"; }
  LayerConfig config() const;
  static KLDivergence from_config(const ConfigReader& c);
};

}  // namespace losses

/// A loss type of Accrue's: per_sample(), a reduction and a name.
template <class T>
concept BuiltinLoss = requires(const T& loss, const Tensor& p, const Tensor& t) {
  { loss.per_sample(p, t) } -> std::convertible_to<Tensor>;
  { loss.reduction } -> std::convertible_to<Reduction>;
  { loss.name() } -> std::convertible_to<std::string>;
};

/// A loss that says how many units (tokens) each sample counts, for means per unit.
template <class T>
concept CountingLoss = requires(const T& loss, const Tensor& t) {
  { loss.counts(t) } -> std::convertible_to<std::vector<std::int64_t>>;
};

/// A user's loss: a callable on (prediction, target).
template <class T>
concept LossCallable = !BuiltinLoss<T> && std::is_invocable_r_v<Tensor, const T&, const Tensor&, const Tensor&>;

/// Any loss, held by value (compile() takes one).
class Loss {
 public:
  Loss() = default;
  template <BuiltinLoss T>
  Loss(T loss)  // NOLINT: implicit on purpose
      : per_sample_([loss](const Tensor& p, const Tensor& t) { return loss.per_sample(p, t); }),
        reduction_(loss.reduction),
        name_(loss.name()) {
    if constexpr (CountingLoss<T>) counts_ = [loss](const Tensor& t) { return loss.counts(t); };
    if constexpr (requires { loss.config(); }) config_ = loss.config();
  }
  template <LossCallable F>
  Loss(F loss, std::string name = "custom_loss")  // NOLINT: implicit on purpose
      : per_sample_([loss](const Tensor& p, const Tensor& t) { return static_cast<Tensor>(loss(p, t)); }),
        name_(std::move(name)) {}

  bool defined() const { return static_cast<bool>(per_sample_); }
  /// Sum of the per-sample losses of a batch, a differentiable scalar. Throws ShapeError when the
  /// loss returns neither one value per sample nor a scalar.
  Tensor batch_sum(const Tensor& prediction, const Tensor& target) const;
  /// The sum of the per-sample losses, sample b's times weights[b]. Throws ShapeError for a loss
  /// that returns a scalar mean, which cannot be weighted per sample.
  Tensor weighted_sum(const Tensor& prediction, const Tensor& target, std::span<const float> weights) const;
  /// mean: the step's gradient is that of the mean over the step's samples (or counted tokens);
  /// sum: of their sum.
  Reduction reduction() const { return reduction_; }
  /// What the mean divides by for each sample of `targets`: its counted tokens for a loss over
  /// sequences, 1 otherwise (also for any user's loss).
  std::vector<std::int64_t> counts(const Tensor& targets) const;
  /// Their sum over a batch.
  std::int64_t units(const Tensor& targets) const;
  const std::string& name() const { return name_; }
  /// The options of a built-in loss, which a saved model keeps (name() is its type); none for a
  /// function of your own.
  const std::optional<LayerConfig>& config() const { return config_; }

 private:
  std::function<Tensor(const Tensor&, const Tensor&)> per_sample_;
  std::function<std::vector<std::int64_t>(const Tensor&)> counts_;
  Reduction reduction_ = Reduction::mean;
  std::string name_;
  std::optional<LayerConfig> config_;
};

/// Keras's class_weight as a weight per sample: class c's weight (1 for a class it leaves out) for
/// each sample of `targets`, whose class is an int32 label (N), a value rounded from (N, 1), or the
/// largest entry of a one-hot row (N, C). Throws ValueError for targets with a class per token
/// (N, T) or a weight that is negative or not finite, naming the class.
std::vector<float> class_weight_per_sample(const Tensor& targets, const std::map<std::int64_t, float>& class_weight);

/// "{0: 1, 1: 5}".
std::string class_weight_str(const std::map<std::int64_t, float>& class_weight);

}  // namespace accrue
