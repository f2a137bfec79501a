#pragma once
// Learning-rate schedules that count optimizer steps, never micro-batches: a schedule gives the
// factor applied to the optimizer's base learning rate at applied step t (from 0). Its lengths
// (warmup, decay periods) may be given in optimizer steps, epochs, samples seen, or a fraction of
// the run, and are turned into steps with the run's StepPlan before training starts, so a warmup
// keeps its meaning when the accumulation changes.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "../core/cloned_ptr.hpp"
#include "logs.hpp"
#include "step_plan.hpp"

namespace accrue {

class Logs;

/// A length of training.
class Duration {
 public:
  static Duration steps(std::int64_t n);
  static Duration epochs(double e);
  static Duration samples(std::int64_t n);
  /// A fraction of the run's optimizer steps.
  static Duration ratio(double r);

  /// The length in optimizer steps for this run.
  std::int64_t to_steps(const StepPlan& plan) const;
  bool is_zero() const { return value_ == 0.0; }
  /// "100 steps", "1.5 epochs", "50000 samples", "5% of the steps".
  std::string str() const;
  friend bool operator==(const Duration&, const Duration&) = default;

 private:
  enum class Unit { steps, epochs, samples, ratio };
  Duration(Unit unit, double value) : unit_(unit), value_(value) {}
  Unit unit_ = Unit::steps;
  double value_ = 0.0;
};

/// The schedule behind LrSchedule; implement it for a schedule of your own, or use
/// schedules::lambda.
class ScheduleImpl {
 public:
  virtual ~ScheduleImpl() = default;
  virtual std::unique_ptr<ScheduleImpl> clone() const = 0;
  /// Resolves durations against the run; throws ValueError when they do not fit in it.
  virtual void prepare(const StepPlan& plan) = 0;
  /// Factor of the base learning rate at applied optimizer step `step`.
  virtual double factor(std::int64_t step) const = 0;
  /// Called before the first step with the directions of the values the run logs (reduce-on-plateau
  /// in mode "auto" takes its monitored value's from them).
  virtual void on_train_begin(const LogDirections& /*directions*/) {}
  /// Called with each epoch's logs (reduce-on-plateau reacts here).
  virtual void on_epoch_end(const Logs& /*logs*/) {}
  /// Warmup length in steps, for the start-up banner (0 without warmup).
  virtual std::int64_t warmup_steps() const { return 0; }
  virtual std::string str() const = 0;
  /// What a checkpoint keeps beyond the step count, as text handed back to load_state; schedules
  /// that are a function of the step keep nothing.
  virtual std::string state() const { return {}; }
  /// Throws ValueError for text that state() would not have written.
  virtual void load_state(const std::string& /*state*/) {}
};

/// Any learning-rate schedule, held by value.
class LrSchedule {
 public:
  /// The constant schedule.
  LrSchedule();
  explicit LrSchedule(std::unique_ptr<ScheduleImpl> impl) : impl_(std::move(impl)) {}

  void prepare(const StepPlan& plan) { impl_->prepare(plan); }
  double factor(std::int64_t step) const { return impl_->factor(step); }
  void on_train_begin(const LogDirections& directions) { impl_->on_train_begin(directions); }
  void on_epoch_end(const Logs& logs) { impl_->on_epoch_end(logs); }
  std::int64_t warmup_steps() const { return impl_->warmup_steps(); }
  std::string str() const { return impl_->str(); }
  std::string state() const { return impl_->state(); }
  void load_state(const std::string& state) { impl_->load_state(state); }

 private:
  ClonedPtr<ScheduleImpl> impl_;
};

namespace schedules {

/// The base learning rate throughout.
LrSchedule constant();

struct WarmupOptions {
  /// Warmup length; or give warmup_ratio (a fraction of the run), as Hugging Face's warmup_ratio.
  Duration warmup = Duration::steps(0);
  double warmup_ratio = 0.0;
};

/// Linear warmup from 0 to the base rate, then linear decay to 0 at the last step: the formula of
/// transformers.get_linear_schedule_with_warmup.
LrSchedule warmup_linear(WarmupOptions options = {});

struct WarmupCosineOptions {
  Duration warmup = Duration::steps(0);
  double warmup_ratio = 0.0;
  /// The rate the cosine ends at, as a fraction of the base rate (0 reaches zero).
  double min_lr_ratio = 0.0;
};

/// Linear warmup, then half a cosine from the base rate down to min_lr_ratio x base at the last
/// step: get_cosine_schedule_with_warmup (and its min-lr variant).
LrSchedule warmup_cosine(WarmupCosineOptions options = {});

struct StepDecayOptions {
  /// The rate is multiplied by gamma every `every`: torch.optim.lr_scheduler.StepLR.
  Duration every = Duration::epochs(1);
  double gamma = 0.1;
};
LrSchedule step_decay(StepDecayOptions options = {});

struct ExponentialOptions {
  double gamma = 0.99;
  /// How often gamma applies (every step by default; Duration::epochs(1) for PyTorch's per-epoch use).
  Duration every = Duration::steps(1);
};
/// gamma^(t / every), continuously: torch.optim.lr_scheduler.ExponentialLR stepped each `every`.
LrSchedule exponential(ExponentialOptions options = {});

struct PlateauOptions {
  std::string monitor = "val_loss";
  /// "min", "max", or "auto": the direction the monitored metric declares (lower for the loss), as
  /// Keras 3; a value whose direction is unknown is a ValueError asking for "min" or "max".
  std::string mode = "auto";
  double factor = 0.1;
  int patience = 10;
  double min_delta = 1e-4;
  int cooldown = 0;
  /// Lowest factor of the base rate.
  double min_lr_ratio = 0.0;
};
/// The base rate, multiplied by `factor` whenever `monitor` stops improving for `patience` epochs:
/// Keras's ReduceLROnPlateau as a schedule.
LrSchedule reduce_on_plateau(PlateauOptions options = {});

/// factor = f(step, total_steps), for anything else.
LrSchedule lambda(std::function<double(std::int64_t step, std::int64_t total_steps)> f, std::string name = "lambda");

/// The linear scaling rule (Goyal et al., 2017): the rate for `effective_batch` when
/// `base_lr` suits `base_batch`.
double scale_lr_linear(double base_lr, std::int64_t base_batch, std::int64_t effective_batch);
/// The square-root scaling rule (Krizhevsky, 2014; Hoffer et al., 2017), often used with Adam.
double scale_lr_sqrt(double base_lr, std::int64_t base_batch, std::int64_t effective_batch);

}  // namespace schedules

/// Keras's Reduce-on-plateau bookkeeping, shared by the schedule and the callback: it watches one
/// logged value per epoch and says when to cut.
class PlateauTracker {
 public:
  explicit PlateauTracker(const schedules::PlateauOptions& options);
  /// Mode "auto": the monitored value's direction (see BestValue::resolve).
  void resolve(const LogDirections& directions) { best_.resolve(directions); }
  /// Feeds an epoch's value; returns true when the rate should be cut now.
  bool update(double value);
  const schedules::PlateauOptions& options() const { return options_; }

  /// The bookkeeping a checkpoint keeps.
  struct State {
    std::optional<double> best;
    int wait = 0;
    int cooldown_left = 0;
  };
  State state() const { return {best_.best(), wait_, cooldown_left_}; }
  void load_state(const State& state);
  /// "best wait cooldown_left" ("- 0 0" before the first value), and back; parse throws ValueError.
  std::string state_text() const;
  void load_state_text(const std::string& text);

 private:
  schedules::PlateauOptions options_;
  BestValue best_;
  int wait_ = 0;
  int cooldown_left_ = 0;
};

}  // namespace accrue
