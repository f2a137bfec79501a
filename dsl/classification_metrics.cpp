#include "classification_metrics.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "layer_registry.hpp"
#include "metrics.hpp"
#include "../framework/autograd/autograd.hpp"
#include "../framework/ops/ops.hpp"

namespace accrue::metrics {
namespace {

// One score and one 0/1 truth per decision of a batch.
struct Decisions {
  std::vector<float> scores;
  std::vector<bool> truth;
};

std::vector<float> host_floats(const Tensor& t) {
  const NoGradGuard no_grad;
  return (t.dtype() == DType::f32 ? t : ops::float32(t)).to(Device::cpu()).to_vector<float>();
}

std::vector<float> target_values(const Tensor& target) {
  if (target.dtype() != DType::i32) return host_floats(target);
  const std::vector<std::int32_t> v = target.to(Device::cpu()).to_vector<std::int32_t>();
  return {v.begin(), v.end()};
}

// The sigmoid of each score.
void sigmoid(std::vector<float>& scores) {
  for (float& s : scores) s = 1.0f / (1.0f + std::exp(-s));
}

// The softmax of each row of C scores.
void softmax_rows(std::vector<float>& scores, std::size_t C) {
  for (std::size_t row = 0; row + C <= scores.size(); row += C) {
    const auto first = scores.begin() + static_cast<std::ptrdiff_t>(row), last = first + static_cast<std::ptrdiff_t>(C);
    const float top = *std::max_element(first, last);
    double sum = 0.0;
    for (auto it = first; it != last; ++it) sum += std::exp(static_cast<double>(*it - top));
    for (auto it = first; it != last; ++it) *it = static_cast<float>(std::exp(static_cast<double>(*it - top)) / sum);
  }
}

// Scores a threshold in [0, 1] can decide: probabilities, within float rounding of a sigmoid or a
// softmax. A logit scored as a probability gives a plausible number that means nothing (an AUC of
// 0.07 for a classifier whose probabilities give 0.93), so it is refused.
void check_probabilities(const std::string& metric, const std::vector<float>& scores) {
  constexpr float slack = 1e-5f;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const float s = scores[i];
    if (std::isnan(s) || (s >= -slack && s <= 1.0f + slack)) continue;
    throw ValueError(fmt::format("{}: score {} (element {} of the batch) is outside [0, 1]: its thresholds are "
                                 "probabilities. For a model that ends in logits (Dense with CrossEntropy, or "
                                 "BinaryCrossEntropy{{.from_logits = true}}) give the metric .from_logits = true",
                                 metric, s, i));
  }
}

Decisions decisions(const std::string& metric, const Tensor& prediction, const Tensor& target,
                    std::optional<std::int64_t> class_id, bool from_logits) {
  Decisions d;
  if (class_id) {
    ACCRUE_CHECK_SHAPE(prediction.rank() == 2 && target.rank() == 1 && target.size(0) == prediction.size(0) &&
                           target.dtype() == DType::i32,
                       "{} with class_id: needs scores (B, C) and int32 labels (B), got {} and {} of {}", metric,
                       prediction.shape(), target.shape(), dtype_name(target.dtype()));
    const std::int64_t C = prediction.size(1);
    ACCRUE_CHECK(*class_id >= 0 && *class_id < C, "{}: class_id {} is not one of the {} classes", metric, *class_id, C);
    std::vector<float> p = host_floats(prediction);
    if (from_logits) softmax_rows(p, static_cast<std::size_t>(C));
    else check_probabilities(metric, p);
    const std::vector<float> y = target_values(target);
    for (std::size_t i = 0; i < y.size(); ++i) {
      d.scores.push_back(p[i * static_cast<std::size_t>(C) + static_cast<std::size_t>(*class_id)]);
      d.truth.push_back(y[i] == static_cast<float>(*class_id));
    }
    return d;
  }
  const bool column = prediction.rank() == 2 && prediction.size(1) == 1 && target.rank() == 1 &&
                      target.size(0) == prediction.size(0);
  ACCRUE_CHECK_SHAPE(column || prediction.shape() == target.shape(),
                     "{}: needs predictions of the targets' shape (or (B, 1) for labels (B)), got {} and {}; for "
                     "class scores (B, C) name the class: class_id",
                     metric, prediction.shape(), target.shape());
  d.scores = host_floats(prediction);
  if (from_logits) sigmoid(d.scores);
  else check_probabilities(metric, d.scores);
  for (float y : target_values(target)) d.truth.push_back(y != 0.0f);
  return d;
}

void count(BinaryCounts& c, bool predicted, bool truth) {
  if (predicted) (truth ? c.tp : c.fp) += 1;
  else (truth ? c.fn : c.tn) += 1;
}

double ratio(double num, double den) { return den > 0.0 ? num / den : 0.0; }

ConfigValue class_option(std::optional<std::int64_t> class_id) {
  return class_id ? ConfigValue{*class_id} : ConfigValue{};
}

std::optional<std::int64_t> class_of(const ConfigReader& c) {
  return c.is_set("class_id") ? std::optional<std::int64_t>{c.integer("class_id")} : std::nullopt;
}

// Files from before from_logits and name have neither.
bool logits_of(const ConfigReader& c) { return c.is_set("from_logits") && c.flag("from_logits"); }
std::string name_of(const ConfigReader& c) { return c.is_set("name") ? c.text("name") : std::string{}; }

}  // namespace

void BinaryMetric::update(const Tensor& prediction, const Tensor& target, double) {
  const Decisions d = decisions(name(), prediction, target, options_.class_id, options_.from_logits);
  for (std::size_t i = 0; i < d.scores.size(); ++i) count(counts_, d.scores[i] > options_.threshold, d.truth[i]);
}

LayerConfig BinaryMetric::config() const {
  return {{"threshold", float_option(options_.threshold)},
          {"class_id", class_option(options_.class_id)},
          {"from_logits", options_.from_logits},
          {"name", options_.name}};
}

BinaryOptions BinaryMetric::options_from(const ConfigReader& c) {
  return {.threshold = c.real("threshold"), .class_id = class_of(c), .from_logits = logits_of(c), .name = name_of(c)};
}

std::vector<double> BinaryMetric::state() const {
  return {static_cast<double>(counts_.tp), static_cast<double>(counts_.fp), static_cast<double>(counts_.fn),
          static_cast<double>(counts_.tn)};
}

void BinaryMetric::load_state(const std::vector<double>& state) {
  const std::string n = name();
  ACCRUE_CHECK(state.size() == 4, "{}: a saved state has 4 counts (tp, fp, fn, tn), got {}", n, state.size());
  counts_ = {saved_count(state[0], n), saved_count(state[1], n), saved_count(state[2], n), saved_count(state[3], n)};
}

double Precision::result() const { return ratio(static_cast<double>(counts_.tp), static_cast<double>(counts_.tp + counts_.fp)); }

double Recall::result() const { return ratio(static_cast<double>(counts_.tp), static_cast<double>(counts_.tp + counts_.fn)); }

double F1Score::result() const {
  return ratio(2.0 * static_cast<double>(counts_.tp), static_cast<double>(2 * counts_.tp + counts_.fp + counts_.fn));
}

AUC::AUC(AucOptions options) : options_(options) {
  ACCRUE_CHECK(options_.num_thresholds >= 2, "AUC: num_thresholds must be at least 2, got {}", options_.num_thresholds);
  // Keras's: the first just below 0 and the last just above 1, so every score falls between.
  const int n = options_.num_thresholds;
  thresholds_.push_back(-1e-7f);
  for (int i = 1; i + 1 < n; ++i) thresholds_.push_back(static_cast<float>(i) / static_cast<float>(n - 1));
  thresholds_.push_back(1.0f + 1e-7f);
  reset();
}

void AUC::reset() { counts_.assign(thresholds_.size(), BinaryCounts{}); }

void AUC::update(const Tensor& prediction, const Tensor& target, double) {
  const Decisions d = decisions(name(), prediction, target, options_.class_id, options_.from_logits);
  for (std::size_t i = 0; i < d.scores.size(); ++i)
    for (std::size_t t = 0; t < thresholds_.size(); ++t) count(counts_[t], d.scores[i] > thresholds_[t], d.truth[i]);
}

double BinaryAccuracy::result() const {
  return ratio(static_cast<double>(counts_.tp + counts_.tn), static_cast<double>(counts_.tp + counts_.fp + counts_.fn + counts_.tn));
}

double AUC::result() const {
  double area = 0.0;
  for (std::size_t i = 0; i + 1 < counts_.size(); ++i) {
    const BinaryCounts &a = counts_[i], &b = counts_[i + 1];
    if (options_.curve == AucCurve::roc) {
      const auto tpr = [](const BinaryCounts& c) { return ratio(static_cast<double>(c.tp), static_cast<double>(c.tp + c.fn)); };
      const auto fpr = [](const BinaryCounts& c) { return ratio(static_cast<double>(c.fp), static_cast<double>(c.fp + c.tn)); };
      area += (fpr(a) - fpr(b)) * (tpr(a) + tpr(b)) / 2.0;
      continue;
    }
    // Keras's interpolate_pr_auc: precision linear in the count of positives between thresholds.
    const double dtp = static_cast<double>(a.tp - b.tp);
    const double pa = static_cast<double>(a.tp + a.fp), pb = static_cast<double>(b.tp + b.fp);
    const double slope = ratio(dtp, std::max(pa - pb, 0.0));
    const double intercept = static_cast<double>(b.tp) - slope * pb;
    const double p_ratio = pa > 0.0 && pb > 0.0 ? pa / pb : 1.0;
    area += ratio(slope * (dtp + intercept * std::log(p_ratio)), static_cast<double>(b.tp + b.fn));
  }
  return area;
}

LayerConfig AUC::config() const {
  return {{"curve", std::string{options_.curve == AucCurve::roc ? "roc" : "pr"}},
          {"num_thresholds", std::int64_t{options_.num_thresholds}},
          {"class_id", class_option(options_.class_id)},
          {"from_logits", options_.from_logits},
          {"name", options_.name}};
}

AUC AUC::from_config(const ConfigReader& c) {
  const std::string curve = c.text("curve");
  ACCRUE_CHECK(curve == "roc" || curve == "pr", "AUC: curve '{}' is neither roc nor pr", curve);
  return AUC{{.curve = curve == "roc" ? AucCurve::roc : AucCurve::pr,
              .num_thresholds = static_cast<int>(c.integer("num_thresholds")),
              .class_id = class_of(c),
              .from_logits = logits_of(c),
              .name = name_of(c)}};
}

std::vector<double> AUC::state() const {
  std::vector<double> s;
  for (const BinaryCounts& c : counts_)
    for (std::int64_t v : {c.tp, c.fp, c.fn, c.tn}) s.push_back(static_cast<double>(v));
  return s;
}

void AUC::load_state(const std::vector<double>& state) {
  ACCRUE_CHECK(state.size() == 4 * counts_.size(), "{}: a saved state has 4 counts at each of {} thresholds, got {} values",
               name(), counts_.size(), state.size());
  for (std::size_t t = 0; t < counts_.size(); ++t)
    counts_[t] = {saved_count(state[4 * t], name()), saved_count(state[4 * t + 1], name()),
                  saved_count(state[4 * t + 2], name()), saved_count(state[4 * t + 3], name())};
}

void SparseTopKCategoricalAccuracy::update(const Tensor& prediction, const Tensor& target, double) {
  ACCRUE_CHECK(k_ >= 1, "sparse_top_k_categorical_accuracy: k must be at least 1, got {}", k_);
  ACCRUE_CHECK_SHAPE(prediction.rank() == 2 && target.rank() == 1 && target.size(0) == prediction.size(0) &&
                         target.dtype() == DType::i32,
                     "sparse_top_k_categorical_accuracy: needs scores (B, C) and int32 labels (B), got {} and {} of {}",
                     prediction.shape(), target.shape(), dtype_name(target.dtype()));
  const std::size_t C = static_cast<std::size_t>(prediction.size(1));
  const std::vector<float> p = host_floats(prediction), y = target_values(target);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto label = static_cast<std::size_t>(y[i]);
    ACCRUE_CHECK(y[i] >= 0 && label < C, "sparse_top_k_categorical_accuracy: label {} of sample {} is outside [0, {})",
                 y[i], i, C);
    // In the top k when fewer than k classes score higher.
    const float own = p[i * C + label];
    const auto higher = std::count_if(p.begin() + static_cast<std::ptrdiff_t>(i * C),
                                      p.begin() + static_cast<std::ptrdiff_t>((i + 1) * C), [&](float s) { return s > own; });
    correct_ += higher < k_ ? 1 : 0;
  }
  total_ += static_cast<std::int64_t>(y.size());
}

LayerConfig SparseTopKCategoricalAccuracy::config() const { return {{"k", k_}, {"name", name_}}; }

SparseTopKCategoricalAccuracy SparseTopKCategoricalAccuracy::from_config(const ConfigReader& c) {
  return SparseTopKCategoricalAccuracy{c.integer("k"), name_of(c)};
}

void SparseTopKCategoricalAccuracy::load_state(const std::vector<double>& state) {
  ACCRUE_CHECK(state.size() == 2, "{}: a saved state has 2 values (correct, total), got {}", name(), state.size());
  correct_ = saved_count(state[0], name());
  total_ = saved_count(state[1], name());
}

ConfusionMatrix::ConfusionMatrix(ConfusionMatrixOptions options) : options_(std::move(options)) {
  const std::int64_t n = options_.num_classes;
  // Its counts are n x n (and summed over processes each epoch): 4096 classes hold 128 MiB.
  ACCRUE_CHECK(n >= 2 && n <= 4096, "confusion_matrix: num_classes must be from 2 to 4096, got {}", n);
  ACCRUE_CHECK(options_.labels.empty() || static_cast<std::int64_t>(options_.labels.size()) == n,
               "confusion_matrix: {} labels for {} classes", options_.labels.size(), n);
  counts_.assign(static_cast<std::size_t>(n * n), 0);
}

std::size_t ConfusionMatrix::predicted_class(const std::vector<float>& scores, std::size_t sample, bool one_output) const {
  if (one_output) return scores[sample] > options_.threshold ? 1 : 0;
  const auto n = static_cast<std::size_t>(options_.num_classes);
  const auto row = scores.begin() + static_cast<std::ptrdiff_t>(sample * n);
  return static_cast<std::size_t>(std::max_element(row, row + static_cast<std::ptrdiff_t>(n)) - row);  // the first highest
}

void ConfusionMatrix::update(const Tensor& prediction, const Tensor& target, double) {
  const std::int64_t n = options_.num_classes;
  const std::int64_t B = prediction.rank() >= 1 ? prediction.size(0) : 0;
  const bool scores = prediction.rank() == 2 && prediction.size(1) == n;
  const bool one_output = n == 2 && (prediction.rank() == 1 || (prediction.rank() == 2 && prediction.size(1) == 1));
  ACCRUE_CHECK_SHAPE((scores || one_output) && target.numel() == B && target.rank() >= 1 && target.size(0) == B,
                     "confusion_matrix: needs scores (B, {}) and a label per sample{}, got predictions {} and targets {}",
                     n, n == 2 ? " (or one output (B, 1) against 0/1 targets)" : "", prediction.shape(), target.shape());
  std::vector<float> p = host_floats(prediction);
  if (one_output && options_.from_logits) sigmoid(p);
  else if (one_output) check_probabilities(name(), p);
  const std::vector<float> y = target_values(target);
  for (std::size_t i = 0; i < y.size(); ++i) {
    // As Precision reads 0/1 targets (Keras casts them to bool); a class label must be one of the classes.
    const float label = one_output && target.dtype() != DType::i32 ? (y[i] != 0.0f ? 1.0f : 0.0f) : y[i];
    ACCRUE_CHECK(label >= 0.0f && label < static_cast<float>(n), "confusion_matrix: label {} of sample {} is outside [0, {})",
                 y[i], i, n);
    counts_[static_cast<std::size_t>(label) * static_cast<std::size_t>(n) + predicted_class(p, i, one_output)] += 1;
  }
}

CountTable ConfusionMatrix::table() const {
  CountTable t{options_.labels, counts_};
  if (t.labels.empty())
    for (std::int64_t c = 0; c < options_.num_classes; ++c) t.labels.push_back(std::to_string(c));
  return t;
}

std::int64_t ConfusionMatrix::count(std::int64_t truth, std::int64_t predicted) const {
  const std::int64_t n = options_.num_classes;
  ACCRUE_CHECK(truth >= 0 && truth < n && predicted >= 0 && predicted < n,
               "confusion_matrix: count({}, {}) is outside the {} classes", truth, predicted, n);
  return counts_[static_cast<std::size_t>(truth * n + predicted)];
}

LayerConfig ConfusionMatrix::config() const {
  return {{"num_classes", options_.num_classes},
          {"threshold", float_option(options_.threshold)},
          {"from_logits", options_.from_logits},
          {"labels", options_.labels}};
}

ConfusionMatrix ConfusionMatrix::from_config(const ConfigReader& c) {
  return ConfusionMatrix{{.num_classes = c.integer("num_classes"),
                          .threshold = c.real("threshold"),
                          .from_logits = logits_of(c),
                          .labels = c.texts("labels")}};
}

void ConfusionMatrix::load_state(const std::vector<double>& state) {
  ACCRUE_CHECK(state.size() == counts_.size(), "{}: a saved state has {} counts ({} classes squared), got {}", name(),
               counts_.size(), options_.num_classes, state.size());
  for (std::size_t i = 0; i < state.size(); ++i) counts_[i] = saved_count(state[i], name());
}

}  // namespace accrue::metrics
