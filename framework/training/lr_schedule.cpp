#include "lr_schedule.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <numbers>
#include <sstream>

#include "logs.hpp"
#include "../core/error.hpp"

namespace accrue {
namespace {

// Doubles in checkpoint text as hexadecimal floating point: exact, and read back by strtod.
std::string exact_double(double v) { return fmt::format("{:a}", v); }

double parse_double(const std::string& text, const char* what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  ACCRUE_CHECK(!text.empty() && end == text.c_str() + text.size(), "{}: '{}' is not a number", what, text);
  return v;
}

}  // namespace

Duration Duration::steps(std::int64_t n) {
  ACCRUE_CHECK(n >= 0, "Duration::steps({}) is negative", n);
  return {Unit::steps, static_cast<double>(n)};
}
Duration Duration::epochs(double e) {
  ACCRUE_CHECK(e >= 0, "Duration::epochs({}) is negative", e);
  return {Unit::epochs, e};
}
Duration Duration::samples(std::int64_t n) {
  ACCRUE_CHECK(n >= 0, "Duration::samples({}) is negative", n);
  return {Unit::samples, static_cast<double>(n)};
}
Duration Duration::ratio(double r) {
  ACCRUE_CHECK(r >= 0 && r <= 1, "Duration::ratio({}) is not a fraction in [0, 1]", r);
  return {Unit::ratio, r};
}

std::int64_t Duration::to_steps(const StepPlan& plan) const {
  switch (unit_) {
    case Unit::steps: return static_cast<std::int64_t>(value_);
    case Unit::epochs: return plan.steps_after_epochs(value_);
    case Unit::samples: return plan.steps_after_samples(static_cast<std::int64_t>(value_));
    case Unit::ratio: return static_cast<std::int64_t>(std::ceil(value_ * static_cast<double>(plan.total_optimizer_steps())));
  }
  return 0;
}

std::string Duration::str() const {
  switch (unit_) {
    case Unit::steps: return fmt::format("{:g} steps", value_);
    case Unit::epochs: return fmt::format("{:g} epochs", value_);
    case Unit::samples: return fmt::format("{:g} samples", value_);
    case Unit::ratio: return fmt::format("{:g}% of the steps", 100 * value_);
  }
  return "?";
}

namespace {

class Constant final : public ScheduleImpl {
 public:
  std::unique_ptr<ScheduleImpl> clone() const override { return std::make_unique<Constant>(*this); }
  void prepare(const StepPlan&) override {}
  double factor(std::int64_t) const override { return 1.0; }
  std::string str() const override { return "constant"; }
};

// Resolves a warmup given as a Duration or as a ratio (not both) and checks it fits the run.
std::int64_t resolve_warmup(const char* name, const Duration& warmup, double ratio, const StepPlan& plan) {
  ACCRUE_CHECK(warmup.is_zero() || ratio == 0.0, "{}: give warmup or warmup_ratio, not both", name);
  ACCRUE_CHECK(ratio >= 0.0 && ratio <= 1.0, "{}: warmup_ratio {} is not a fraction in [0, 1]", name, ratio);
  const std::int64_t steps = ratio != 0.0 ? Duration::ratio(ratio).to_steps(plan) : warmup.to_steps(plan);
  ACCRUE_CHECK(steps <= plan.total_optimizer_steps(),
               "{}: the warmup of {} optimizer steps ({}) is longer than the {} optimizer steps of training; shorten "
               "it or train longer",
               name, steps, ratio != 0.0 ? Duration::ratio(ratio).str() : warmup.str(), plan.total_optimizer_steps());
  return steps;
}

class WarmupDecay final : public ScheduleImpl {
 public:
  enum class Shape { linear, cosine };
  WarmupDecay(Shape shape, Duration warmup, double ratio, double min_ratio)
      : shape_(shape), warmup_(warmup), ratio_(ratio), min_ratio_(min_ratio) {
    ACCRUE_CHECK(min_ratio >= 0.0 && min_ratio <= 1.0, "warmup_cosine: min_lr_ratio {} is not in [0, 1]", min_ratio);
  }
  std::unique_ptr<ScheduleImpl> clone() const override { return std::make_unique<WarmupDecay>(*this); }
  void prepare(const StepPlan& plan) override {
    warmup_steps_ = resolve_warmup(shape_ == Shape::linear ? "warmup_linear" : "warmup_cosine", warmup_, ratio_, plan);
    total_ = plan.total_optimizer_steps();
  }
  double factor(std::int64_t step) const override {
    if (step < warmup_steps_) return static_cast<double>(step) / static_cast<double>(std::max<std::int64_t>(1, warmup_steps_));
    const double rest = static_cast<double>(std::max<std::int64_t>(1, total_ - warmup_steps_));
    if (shape_ == Shape::linear) return std::max(0.0, static_cast<double>(total_ - step) / rest);
    const double progress = static_cast<double>(step - warmup_steps_) / rest;
    const double cosine = std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
    return min_ratio_ + (1.0 - min_ratio_) * cosine;
  }
  std::int64_t warmup_steps() const override { return warmup_steps_; }
  std::string str() const override {
    const std::string warmup = ratio_ != 0.0 ? Duration::ratio(ratio_).str() : warmup_.str();
    if (shape_ == Shape::linear) return fmt::format("warmup_linear(warmup {})", warmup);
    return fmt::format("warmup_cosine(warmup {}, min_lr_ratio {:g})", warmup, min_ratio_);
  }

 private:
  Shape shape_;
  Duration warmup_;
  double ratio_, min_ratio_;
  std::int64_t warmup_steps_ = 0, total_ = 0;
};

class Periodic final : public ScheduleImpl {
 public:
  enum class Kind { step_decay, exponential };
  Periodic(Kind kind, Duration every, double gamma) : kind_(kind), every_(every), gamma_(gamma) {
    ACCRUE_CHECK(gamma > 0.0, "{}: gamma must be positive, got {}", name(), gamma);
  }
  std::unique_ptr<ScheduleImpl> clone() const override { return std::make_unique<Periodic>(*this); }
  void prepare(const StepPlan& plan) override {
    period_ = every_.to_steps(plan);
    ACCRUE_CHECK(period_ >= 1, "{}: `every` ({}) is shorter than one optimizer step of this run", name(), every_.str());
  }
  double factor(std::int64_t step) const override {
    const double periods = static_cast<double>(step) / static_cast<double>(period_);
    return std::pow(gamma_, kind_ == Kind::step_decay ? std::floor(periods) : periods);
  }
  std::string str() const override { return fmt::format("{}(gamma {:g} every {})", name(), gamma_, every_.str()); }

 private:
  const char* name() const { return kind_ == Kind::step_decay ? "step_decay" : "exponential"; }
  Kind kind_;
  Duration every_;
  double gamma_;
  std::int64_t period_ = 1;
};

class Plateau final : public ScheduleImpl {
 public:
  explicit Plateau(const schedules::PlateauOptions& o) : tracker_(o) {}
  std::unique_ptr<ScheduleImpl> clone() const override { return std::make_unique<Plateau>(*this); }
  void prepare(const StepPlan&) override {}
  double factor(std::int64_t) const override { return factor_; }
  void on_train_begin(const LogDirections& directions) override { tracker_.resolve(directions); }
  void on_epoch_end(const Logs& logs) override {
    const auto value = logs.get(tracker_.options().monitor);
    ACCRUE_CHECK(value.has_value(), "reduce_on_plateau monitors '{}', which the epoch's logs do not have ({}); pass "
                                    "validation data or monitor \"loss\"",
                 tracker_.options().monitor, logs.str());
    if (tracker_.update(*value)) factor_ = std::max(tracker_.options().min_lr_ratio, factor_ * tracker_.options().factor);
  }
  std::string str() const override {
    return fmt::format("reduce_on_plateau({}, factor {:g}, patience {})", tracker_.options().monitor,
                       tracker_.options().factor, tracker_.options().patience);
  }
  std::string state() const override { return fmt::format("{} {}", exact_double(factor_), tracker_.state_text()); }
  void load_state(const std::string& text) override {
    const auto space = text.find(' ');
    ACCRUE_CHECK(space != std::string::npos, "reduce_on_plateau: saved state '{}' is not 'factor tracker'", text);
    const double factor = parse_double(text.substr(0, space), "reduce_on_plateau factor");
    tracker_.load_state_text(text.substr(space + 1));
    factor_ = factor;
  }

 private:
  PlateauTracker tracker_;
  double factor_ = 1.0;
};

class Lambda final : public ScheduleImpl {
 public:
  Lambda(std::function<double(std::int64_t, std::int64_t)> f, std::string name) : f_(std::move(f)), name_(std::move(name)) {
    ACCRUE_CHECK(static_cast<bool>(f_), "schedules::lambda: the function is empty");
  }
  std::unique_ptr<ScheduleImpl> clone() const override { return std::make_unique<Lambda>(*this); }
  void prepare(const StepPlan& plan) override { total_ = plan.total_optimizer_steps(); }
  double factor(std::int64_t step) const override {
    const double f = f_(step, total_);
    ACCRUE_CHECK(std::isfinite(f) && f >= 0.0, "schedule '{}' returned {} at step {}; factors must be finite and >= 0",
                 name_, f, step);
    return f;
  }
  std::string str() const override { return name_; }

 private:
  std::function<double(std::int64_t, std::int64_t)> f_;
  std::string name_;
  std::int64_t total_ = 0;
};

}  // namespace

LrSchedule::LrSchedule() : impl_(std::make_unique<Constant>()) {}

PlateauTracker::PlateauTracker(const schedules::PlateauOptions& options)
    : options_(options), best_(options.monitor, options.mode, options.min_delta, "reduce on plateau") {
  ACCRUE_CHECK(options.factor > 0.0 && options.factor < 1.0, "reduce on plateau: factor must be in (0, 1), got {}",
               options.factor);
  ACCRUE_CHECK(options.patience >= 0 && options.cooldown >= 0, "reduce on plateau: patience and cooldown must be >= 0");
}

void PlateauTracker::load_state(const State& state) {
  ACCRUE_CHECK(state.wait >= 0 && state.cooldown_left >= 0, "reduce on plateau: a saved wait ({}) or cooldown ({}) is negative",
               state.wait, state.cooldown_left);
  best_.set_best(state.best);
  wait_ = state.wait;
  cooldown_left_ = state.cooldown_left;
}

std::string PlateauTracker::state_text() const {
  return fmt::format("{} {} {}", best_.best() ? exact_double(*best_.best()) : std::string{"-"}, wait_, cooldown_left_);
}

void PlateauTracker::load_state_text(const std::string& text) {
  std::istringstream in(text);
  std::string best;
  State s;
  ACCRUE_CHECK(static_cast<bool>(in >> best >> s.wait >> s.cooldown_left) && (in >> std::ws).eof(),
               "reduce on plateau: saved state '{}' is not 'best wait cooldown'", text);
  if (best != "-") s.best = parse_double(best, "reduce on plateau best value");
  load_state(s);
}

bool PlateauTracker::update(double value) {
  if (cooldown_left_ > 0) {
    --cooldown_left_;
    wait_ = 0;
  }
  if (best_.improves(value)) {
    best_.set_best(value);
    wait_ = 0;
    return false;
  }
  if (cooldown_left_ > 0) return false;
  if (++wait_ > options_.patience) {
    cooldown_left_ = options_.cooldown;
    wait_ = 0;
    return true;
  }
  return false;
}

namespace schedules {

LrSchedule constant() { return LrSchedule{}; }

LrSchedule warmup_linear(WarmupOptions o) {
  return LrSchedule{std::make_unique<WarmupDecay>(WarmupDecay::Shape::linear, o.warmup, o.warmup_ratio, 0.0)};
}

LrSchedule warmup_cosine(WarmupCosineOptions o) {
  return LrSchedule{std::make_unique<WarmupDecay>(WarmupDecay::Shape::cosine, o.warmup, o.warmup_ratio, o.min_lr_ratio)};
}

LrSchedule step_decay(StepDecayOptions o) {
  return LrSchedule{std::make_unique<Periodic>(Periodic::Kind::step_decay, o.every, o.gamma)};
}

LrSchedule exponential(ExponentialOptions o) {
  return LrSchedule{std::make_unique<Periodic>(Periodic::Kind::exponential, o.every, o.gamma)};
}

LrSchedule reduce_on_plateau(PlateauOptions o) { return LrSchedule{std::make_unique<Plateau>(o)}; }

LrSchedule lambda(std::function<double(std::int64_t, std::int64_t)> f, std::string name) {
  return LrSchedule{std::make_unique<Lambda>(std::move(f), std::move(name))};
}

double scale_lr_linear(double base_lr, std::int64_t base_batch, std::int64_t effective_batch) {
  ACCRUE_CHECK(base_batch > 0 && effective_batch > 0, "scale_lr_linear: batch sizes must be positive");
  return base_lr * static_cast<double>(effective_batch) / static_cast<double>(base_batch);
}

double scale_lr_sqrt(double base_lr, std::int64_t base_batch, std::int64_t effective_batch) {
  ACCRUE_CHECK(base_batch > 0 && effective_batch > 0, "scale_lr_sqrt: batch sizes must be positive");
  return base_lr * std::sqrt(static_cast<double>(effective_batch) / static_cast<double>(base_batch));
}

}  // namespace schedules
}  // namespace accrue
