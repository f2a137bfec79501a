#pragma once
// Metrics for compile(): values accumulated over an epoch's batches and reported in the logs.
// A metric is a value type with reset(), update(prediction, target, loss_sum), result() and
// name(); Metric holds any of them, built-in or the user's own.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "layer.hpp"
#include "../framework/core/cloned_ptr.hpp"
#include "../framework/core/error.hpp"
#include "../framework/core/tensor.hpp"
#include "../framework/training/logs.hpp"

namespace accrue {

namespace distributed {
class Communicator;
}  // namespace distributed

namespace metrics {

/// A count a metric saved as a double (state()): a whole number from 0 to 2^53, or ValueError
/// naming the metric.
std::int64_t saved_count(double v, std::string_view metric);

/// Fraction of samples whose largest logit is at their label (Keras's "accuracy" for int labels);
/// samples labelled negative (CrossEntropy's ignore_index, -100) are not counted.
class Accuracy {
 public:
  void reset() { correct_ = total_ = 0; }
  void update(const Tensor& prediction, const Tensor& target, double loss_sum);
  /// A batch's summed loss over `units` samples or counted tokens.
  void add(double loss_sum, std::int64_t units);
  double result() const { return total_ == 0 ? 0.0 : static_cast<double>(correct_) / static_cast<double>(total_); }
  std::string name() const { return "accuracy"; }
  Direction direction() const { return Direction::higher; }
  /// No options; a saved model keeps the metric by its name.
  LayerConfig config() const { return {}; }
  /// The running counts, for checkpoints taken inside an epoch.
  std::vector<double> state() const { return {static_cast<double>(correct_), static_cast<double>(total_)}; }
  void load_state(const std::vector<double>& state);

 private:
  std::int64_t correct_ = 0, total_ = 0;
};

/// The mean per-sample loss; the training loop always keeps one, reported as "loss".
class MeanLoss {
 public:
  void reset() {
    sum_ = 0.0;
    count_ = 0;
  }
  void update(const Tensor& prediction, const Tensor& target, double loss_sum);
  /// A batch's summed loss over `units` samples or counted tokens.
  void add(double loss_sum, std::int64_t units);
  double result() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
  std::string name() const { return "loss"; }
  Direction direction() const { return Direction::lower; }
  LayerConfig config() const { return {}; }
  /// The running sum and count, for checkpoints taken inside an epoch.
  std::vector<double> state() const { return {sum_, static_cast<double>(count_)}; }
  void load_state(const std::vector<double>& state);

 private:
  double sum_ = 0.0;
  std::int64_t count_ = 0;
};

}  // namespace metrics

/// A metric reports one value (result()) or a table of counts (table(), metrics::ConfusionMatrix).
template <class T>
concept MetricType = requires(T m, const T& cm, const Tensor& t) {
  m.reset();
  m.update(t, t, 0.0);
  { cm.name() } -> std::convertible_to<std::string>;
} && (requires(const T& cm) {
  { cm.result() } -> std::convertible_to<double>;
} || requires(const T& cm) {
  { cm.table() } -> std::convertible_to<CountTable>;
});

/// Any metric, held by value; copying gives an independent metric. A metric of your own may also
/// declare `Direction direction() const` (which way its value gets better: callbacks monitoring it
/// in mode "auto" need it) and `std::string type() const` (the kind a saved model records, when
/// name() can be chosen by the user).
class Metric {
 public:
  template <MetricType T>
  Metric(T metric)  // NOLINT: implicit on purpose, so compile() takes {metrics::Accuracy{}}
      : impl_(std::make_unique<Held<T>>(std::move(metric))) {}

  void reset() { impl_->reset(); }
  /// `prediction` is the model's output, `target` the batch's targets, `loss_sum` the sum of the
  /// batch's per-sample losses.
  void update(const Tensor& prediction, const Tensor& target, double loss_sum) {
    impl_->update(prediction, target, loss_sum);
  }
  /// The metric's value; throws ValueError for a metric that reports a table.
  double result() const { return impl_->result(); }
  /// The table of a metric that reports one (table()), else nullopt.
  std::optional<CountTable> table() const { return impl_->table(); }
  /// The name of its value in the logs ("auc", "val_auc" in validation; "label_auc" for output
  /// "label" of a model of several).
  std::string name() const { return output_prefix_ + impl_->name(); }
  /// The same metric measuring output `output` of a model of several: named as Keras names it
  /// there ("label_accuracy"), its type unchanged.
  Metric for_output(const std::string& output) const {
    Metric m = *this;
    m.output_prefix_ = output + "_";
    return m;
  }
  /// The kind a saved model records ("precision" for Precision{{.name = "precision_cat"}}); name()
  /// for a metric without type().
  std::string type() const { return impl_->type(); }
  /// Which way the value gets better; nullopt for a metric of your own that does not say (or one
  /// that reports a table).
  std::optional<Direction> direction() const { return impl_->direction(); }
  /// The options of a built-in metric, which a saved model keeps (name() is its type); none for
  /// a metric of your own.
  std::optional<LayerConfig> config() const { return impl_->config(); }
  /// The running values of the epoch so far, for a checkpoint taken inside an epoch: what the
  /// metric's `std::vector<double> state() const` returns, or nullopt when it has none (a resumed
  /// epoch's value then covers only the batches after the resume).
  std::optional<std::vector<double>> state() const { return impl_->state(); }
  /// Hands back what state() returned; throws ValueError for a metric without load_state.
  void load_state(const std::vector<double>& state) { impl_->load_state(state); }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual std::unique_ptr<Concept> clone() const = 0;
    virtual void reset() = 0;
    virtual void update(const Tensor& p, const Tensor& t, double loss_sum) = 0;
    virtual double result() const = 0;
    virtual std::optional<CountTable> table() const = 0;
    virtual std::string name() const = 0;
    virtual std::string type() const = 0;
    virtual std::optional<Direction> direction() const = 0;
    virtual std::optional<LayerConfig> config() const = 0;
    virtual std::optional<std::vector<double>> state() const = 0;
    virtual void load_state(const std::vector<double>& state) = 0;
  };
  template <class T>
  struct Held final : Concept {
    explicit Held(T m) : metric(std::move(m)) {}
    std::unique_ptr<Concept> clone() const override { return std::make_unique<Held<T>>(metric); }
    void reset() override { metric.reset(); }
    void update(const Tensor& p, const Tensor& t, double loss_sum) override { metric.update(p, t, loss_sum); }
    double result() const override {
      if constexpr (requires { metric.result(); }) return metric.result();
      else throw ValueError("metric '" + metric.name() + "' reports a table of counts, not a value: read its table()");
    }
    std::optional<CountTable> table() const override {
      if constexpr (requires { metric.table(); }) return metric.table();
      else return std::nullopt;
    }
    std::string name() const override { return metric.name(); }
    std::string type() const override {
      if constexpr (requires { metric.type(); }) return metric.type();
      else return metric.name();
    }
    std::optional<Direction> direction() const override {
      if constexpr (requires { metric.direction(); }) return metric.direction();
      else return std::nullopt;
    }
    std::optional<LayerConfig> config() const override {
      if constexpr (requires { metric.config(); }) return metric.config();
      else return std::nullopt;
    }
    std::optional<std::vector<double>> state() const override {
      if constexpr (requires { metric.state(); }) return metric.state();
      else return std::nullopt;
    }
    void load_state(const std::vector<double>& state) override {
      if constexpr (requires { metric.load_state(state); }) metric.load_state(state);
      else throw ValueError("metric '" + metric.name() + "' has no load_state(const std::vector<double>&)");
    }
    T metric;
  };
  ClonedPtr<Concept> impl_;
  std::string output_prefix_;
};

/// The directions of the values fit() logs with these metrics: "loss" and each metric that declares
/// one, each also behind "val_".
LogDirections log_directions(const std::vector<Metric>& metrics);

/// The logs of a loss tracker and metrics: "loss" then each metric by name, each behind `prefix`
/// (a metric's table among the logs' tables).
Logs metric_logs(const metrics::MeanLoss& loss, const std::vector<Metric>& metrics, const std::string& prefix = "");

/// Adds the loss tracker's and each metric's sums and counts over all processes of `communicator`,
/// so every rank's results are those of all ranks' samples together (not a mean of means). A
/// metric that keeps no state (no state() member) keeps this process's samples only.
void sum_over_processes(distributed::Communicator& communicator, metrics::MeanLoss& loss, std::vector<Metric>& metrics);

}  // namespace accrue
