#pragma once
// Classification metrics with Keras's names and semantics, kept as counts so that an epoch's value
// over several processes is that of all their samples together (their states are summed, never
// their results averaged): Precision, Recall, F1Score, AUC, SparseTopKCategoricalAccuracy, and
// ConfusionMatrix, which reports a table of counts rather than one value.
//
// Precision, Recall, F1Score and AUC score a binary decision per element: predictions of the
// target's shape (one output per label, probabilities or scores) against 0/1 targets (int32 or
// float), or (B, 1) against int32 labels (B); with `class_id`, scores (B, C) against int32 labels
// (B), class `class_id` against the rest. An element is predicted positive when its score is above
// `threshold` (0 for logits).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "accrue/dsl/layer.hpp"
#include "accrue/framework/tensor.hpp"
#include "accrue/framework/training/logs.hpp"

namespace accrue::metrics {

/// What a binary decision counts: true and false positives, false and true negatives.
struct BinaryCounts {
  std::int64_t tp = 0, fp = 0, fn = 0, tn = 0;
};

/// The options of Precision, Recall and F1Score.
struct BinaryOptions {
  float threshold = 0.5f;
  std::optional<std::int64_t> class_id = std::nullopt;
};

/// What Precision, Recall and F1Score share: the counts of an epoch, their state and options.
class BinaryMetric {
 public:
  void reset() { counts_ = {}; }
  void update(const Tensor& prediction, const Tensor& target, double loss_sum);
  LayerConfig config() const;
  std::vector<double> state() const;
  void load_state(const std::vector<double>& state);
  const BinaryCounts& counts() const { return counts_; }

 protected:
  explicit BinaryMetric(BinaryOptions options, std::string name) : options_(options), name_(std::move(name)) {}
  static BinaryOptions options_from(const ConfigReader& c);
  BinaryOptions options_;
  std::string name_;
  BinaryCounts counts_;
};

/// tp / (tp + fp): Keras's Precision ("precision").
class Precision : public BinaryMetric {
 public:
  explicit(false) Precision(BinaryOptions options = {}) : BinaryMetric(options, "precision") {}
  double result() const;
  std::string name() const { return name_; }
  static Precision from_config(const ConfigReader& c) { return Precision{options_from(c)}; }
};

/// tp / (tp + fn): Keras's Recall ("recall").
class Recall : public BinaryMetric {
 public:
  explicit(false) Recall(BinaryOptions options = {}) : BinaryMetric(options, "recall") {}
  double result() const;
  std::string name() const { return name_; }
  static Recall from_config(const ConfigReader& c) { return Recall{options_from(c)}; }
};

/// 2 tp / (2 tp + fp + fn), the harmonic mean of precision and recall: Keras's F1Score ("f1_score")
/// of one binary decision.
class F1Score : public BinaryMetric {
 public:
  explicit(false) F1Score(BinaryOptions options = {}) : BinaryMetric(options, "f1_score") {}
  double result() const;
  std::string name() const { return name_; }
  static F1Score from_config(const ConfigReader& c) { return F1Score{options_from(c)}; }
};

/// The curve AUC measures: the ROC (true against false positive rate) or precision against recall.
enum class AucCurve { roc, pr };
struct AucOptions {
  AucCurve curve = AucCurve::roc;
  int num_thresholds = 200;
  std::optional<std::int64_t> class_id = std::nullopt;
};

/// The area under the ROC or the precision-recall curve, as Keras's AUC ("auc", "pr_auc" for the
/// PR curve): counts at `num_thresholds` thresholds evenly spaced in [0, 1] (scores must be
/// probabilities), the ROC by the trapezoidal rule, the PR curve by Keras's interpolation (Davis
/// and Goadrich 2006).
class AUC {
 public:
  /// `AUC{}`, `AUC{{.curve = AucCurve::pr}}`.
  explicit(false) AUC(AucOptions options = {});
  void reset();
  void update(const Tensor& prediction, const Tensor& target, double loss_sum);
  double result() const;
  std::string name() const { return options_.curve == AucCurve::roc ? "auc" : "pr_auc"; }
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
  explicit(false) SparseTopKCategoricalAccuracy(std::int64_t k = 5) : k_(k) {}
  void reset() { correct_ = total_ = 0; }
  void update(const Tensor& prediction, const Tensor& target, double loss_sum);
  double result() const { return total_ == 0 ? 0.0 : static_cast<double>(correct_) / static_cast<double>(total_); }
  std::string name() const { return "sparse_top_k_categorical_accuracy"; }
  LayerConfig config() const { return {{"k", k_}}; }
  static SparseTopKCategoricalAccuracy from_config(const ConfigReader& c);
  std::vector<double> state() const { return {static_cast<double>(correct_), static_cast<double>(total_)}; }
  void load_state(const std::vector<double>& state);

 private:
  std::int64_t k_;
  std::int64_t correct_ = 0, total_ = 0;
};

struct ConfusionMatrixOptions {
  /// The classes; 2 with one output per sample (a binary decision at `threshold`).
  std::int64_t num_classes = 0;
  /// With one output (B, 1) or (B): predicted class 1 when the score is above it (0 for logits).
  float threshold = 0.5f;
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
