#pragma once
// Classification metrics with Keras's names and semantics, kept as counts so that an epoch's value
// over several processes is that of all their samples together (their states are summed, never
// their results averaged): Precision, Recall, F1Score, BinaryAccuracy, AUC,
// SparseTopKCategoricalAccuracy, and ConfusionMatrix, which reports a table of counts rather than
// one value.
//
// Precision, Recall, F1Score, BinaryAccuracy and AUC score a binary decision per element:
// predictions of the target's shape (one output per label) against 0/1 targets (int32 or float),
// or (B, 1) against int32 labels (B); with `class_id`, scores (B, C) against int32 labels (B),
// class `class_id` against the rest. Their thresholds are probabilities: a model that ends in
// logits (Dense with CrossEntropy, or BinaryCrossEntropy{.from_logits = true}) needs
// `.from_logits = true`, which takes the sigmoid of each output (with `class_id`, the softmax of
// each row, as CrossEntropy's probabilities). A score outside [0, 1] without it is refused with a
// ValueError naming the metric, rather than counted against thresholds it never meets.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layer.hpp"
#include "../framework/core/tensor.hpp"
#include "../framework/training/logs.hpp"

namespace accrue::metrics {

/// What a binary decision counts: true and false positives, false and true negatives.
struct BinaryCounts {
  std::int64_t tp = 0, fp = 0, fn = 0, tn = 0;
};

/// The options of Precision, Recall, F1Score and BinaryAccuracy.
struct BinaryOptions {
  /// A probability above it is a positive decision.
  float threshold = 0.5f;
  /// One class of scores (B, C) against int32 labels (B).
  std::optional<std::int64_t> class_id = std::nullopt;
  /// The scores are logits: their sigmoid (with class_id, the softmax of each row) is compared
  /// with the threshold.
  bool from_logits = false;
  /// The value's name in the logs ("precision_cat"); empty: the metric's own ("precision"). Two
  /// metrics of one kind need names of their own.
  std::string name = {};
};

/// What Precision, Recall, F1Score and BinaryAccuracy share: the counts of an epoch, their state
/// and options.
class BinaryMetric {
 public:
  void reset() { counts_ = {}; }
  void update(const Tensor& prediction, const Tensor& target, double loss_sum);
  /// The name in the logs: options' name, else type().
  std::string name() const { return options_.name.empty() ? type_ : options_.name; }
  /// The kind a saved model records: "precision", "recall", "f1_score", "binary_accuracy".
  const std::string& type() const { return type_; }
  Direction direction() const { return Direction::higher; }
  LayerConfig config() const;
  std::vector<double> state() const;
  void load_state(const std::vector<double>& state);
  const BinaryCounts& counts() const { return counts_; }

 protected:
  explicit BinaryMetric(BinaryOptions options, std::string type) : options_(std::move(options)), type_(std::move(type)) {}
  static BinaryOptions options_from(const ConfigReader& c);
  BinaryOptions options_;
  std::string type_;
  BinaryCounts counts_;
};

/// tp / (tp + fp): Keras's Precision ("precision").
class Precision : public BinaryMetric {
 public:
  /// `Precision{}`, `Precision{{.class_id = 1, .from_logits = true, .name = "precision_1"}}`.
  explicit(false) Precision(BinaryOptions options = {}) : BinaryMetric(std::move(options), "precision") {}
  double result() const;
  static Precision from_config(const ConfigReader& c) { return Precision{options_from(c)}; }
};

/// tp / (tp + fn): Keras's Recall ("recall").
class Recall : public BinaryMetric {
 public:
  explicit(false) Recall(BinaryOptions options = {}) : BinaryMetric(std::move(options), "recall") {}
  double result() const;
  static Recall from_config(const ConfigReader& c) { return Recall{options_from(c)}; }
};

/// 2 tp / (2 tp + fp + fn), the harmonic mean of precision and recall: Keras's F1Score ("f1_score")
/// of one binary decision.
class F1Score : public BinaryMetric {
 public:
  explicit(false) F1Score(BinaryOptions options = {}) : BinaryMetric(std::move(options), "f1_score") {}
  double result() const;
  static F1Score from_config(const ConfigReader& c) { return F1Score{options_from(c)}; }
};

/// (tp + tn) / all: the fraction of decisions that match their 0/1 target, Keras's BinaryAccuracy
/// ("binary_accuracy"), for a model with one output per label (Accuracy is for class scores).
class BinaryAccuracy : public BinaryMetric {
 public:
  explicit(false) BinaryAccuracy(BinaryOptions options = {}) : BinaryMetric(std::move(options), "binary_accuracy") {}
  double result() const;
  static BinaryAccuracy from_config(const ConfigReader& c) { return BinaryAccuracy{options_from(c)}; }
};

/// The curve AUC measures: the ROC (true against false positive rate) or precision against recall.
enum class AucCurve { roc, pr };
struct AucOptions {
  AucCurve curve = AucCurve::roc;
  int num_thresholds = 200;
  std::optional<std::int64_t> class_id = std::nullopt;
  /// The scores are logits: their sigmoid (with class_id, the softmax of each row) is scored.
  bool from_logits = false;
  /// The value's name in the logs; empty: "auc" (ROC) or "pr_auc".
  std::string name = {};
};

/// The area under the ROC or the precision-recall curve, as Keras's AUC ("auc", "pr_auc" for the
/// PR curve): counts at `num_thresholds` thresholds evenly spaced in [0, 1] (probabilities; logits
/// with from_logits), the ROC by the trapezoidal rule, the PR curve by Keras's interpolation (Davis
/// and Goadrich 2006).
class AUC {
 public:
  /// `AUC{}`, `AUC{{.curve = AucCurve::pr}}`, `AUC{{.class_id = 1, .from_logits = true}}`.
  explicit(false) AUC(AucOptions options = {});
  void reset();
  void update(const Tensor& prediction, const Tensor& target, double loss_sum);
  double result() const;
  std::string name() const { return options_.name.empty() ? type() : options_.name; }
  /// "auc" or "pr_auc", as a saved model records it.
  std::string type() const { return options_.curve == AucCurve::roc ? "auc" : "pr_auc"; }
  Direction direction() const { return Direction::higher; }
  LayerConfig config() const;
  static AUC from_config(const ConfigReader& c);
  std::vector<double> state() const;
  void load_state(const std::vector<double>& state);

 private:
  AucOptions options_;
  std::vector<float> thresholds_;
  std::vector<BinaryCounts> counts_;  // at each threshold
};

/// The fraction of samples whose label is among the k highest scores: Keras's
/// SparseTopKCategoricalAccuracy ("sparse_top_k_categorical_accuracy") for int32 labels.
class SparseTopKCategoricalAccuracy {
 public:
  /// `SparseTopKCategoricalAccuracy{3}`; `name` is the value's name in the logs (empty: the
  /// metric's own).
  explicit(false) SparseTopKCategoricalAccuracy(std::int64_t k = 5, std::string name = {}) : k_(k), name_(std::move(name)) {}
  void reset() { correct_ = total_ = 0; }
  void update(const Tensor& prediction, const Tensor& target, double loss_sum);
  double result() const { return total_ == 0 ? 0.0 : static_cast<double>(correct_) / static_cast<double>(total_); }
  std::string name() const { return name_.empty() ? type() : name_; }
  std::string type() const { return "sparse_top_k_categorical_accuracy"; }
  Direction direction() const { return Direction::higher; }
  LayerConfig config() const;
  static SparseTopKCategoricalAccuracy from_config(const ConfigReader& c);
  std::vector<double> state() const { return {static_cast<double>(correct_), static_cast<double>(total_)}; }
  void load_state(const std::vector<double>& state);

 private:
  std::int64_t k_;
  std::string name_;
  std::int64_t correct_ = 0, total_ = 0;
};

struct ConfusionMatrixOptions {
  /// The classes; 2 with one output per sample (a binary decision at `threshold`).
  std::int64_t num_classes = 0;
  /// With one output (B, 1) or (B): predicted class 1 when the probability is above it.
  float threshold = 0.5f;
  /// With one output: it is a logit (its sigmoid is compared with the threshold). Scores (B, C)
  /// predict their highest class, logits or not.
  bool from_logits = false;
  /// The classes' names in the table; empty: their numbers.
  std::vector<std::string> labels = {};
};

/// The count of each (true class, predicted class) pair over an epoch, as scikit-learn's
/// confusion_matrix: row i, column j counts the samples of class i predicted as j
/// ("confusion_matrix"). Scores (B, C) against int32 labels (B) predict their highest class; one
/// output (B, 1) or (B) against 0/1 targets decides at the threshold. It reports a table, which the
/// logs and the report (callbacks::Report) keep per epoch, training and validation, and whose
/// counts are summed over the processes of a distributed run.
class ConfusionMatrix {
 public:
  /// `ConfusionMatrix{10}`.
  explicit(false) ConfusionMatrix(std::int64_t num_classes) : ConfusionMatrix(ConfusionMatrixOptions{.num_classes = num_classes}) {}
  /// `ConfusionMatrix{{.num_classes = 3, .labels = {"cat", "dog", "bird"}}}`. Throws ValueError for
  /// fewer than 2 classes or a number of labels other than num_classes.
  explicit(false) ConfusionMatrix(ConfusionMatrixOptions options);
  void reset() { counts_.assign(counts_.size(), 0); }
  void update(const Tensor& prediction, const Tensor& target, double loss_sum);
  CountTable table() const;
  /// The samples of class `truth` predicted as `predicted` so far.
  std::int64_t count(std::int64_t truth, std::int64_t predicted) const;
  std::string name() const { return "confusion_matrix"; }
  LayerConfig config() const;
  static ConfusionMatrix from_config(const ConfigReader& c);
  std::vector<double> state() const { return {counts_.begin(), counts_.end()}; }
  void load_state(const std::vector<double>& state);

 private:
  std::size_t predicted_class(const std::vector<float>& scores, std::size_t sample, bool one_output) const;
  ConfusionMatrixOptions options_;
  std::vector<std::int64_t> counts_;  // num_classes x num_classes, by true class then predicted
};

}  // namespace accrue::metrics
