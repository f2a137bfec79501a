#include "recipe.hpp"

#include "../core/memory.hpp"

#include <cmath>

namespace accrue::optim {

Recipe Recipe::accumulate(AccumulationSchedule schedule, AccumulateOptions options) const {
  return with([&](Recipe& r) {
    r.accumulation_ = std::move(schedule);
    r.accumulate_options_ = options;
  });
}

Recipe Recipe::effective_batch(std::int64_t samples) const {
  return accumulate(AccumulationSchedule::effective_batch(samples), accumulate_options_);
}

Recipe Recipe::memory_budget(std::size_t bytes) const {
  return with([&](Recipe& r) { r.memory_budget_ = bytes; });
}

Recipe Recipe::clip(double max_norm, ClipOptions options) const {
  return with([&](Recipe& r) {
    r.clip_norm_ = max_norm;
    r.clip_options_ = options;
  });
}

Recipe Recipe::clip_value(double value) const {
  return with([&](Recipe& r) { r.clip_value_ = value; });
}

Recipe Recipe::amp(bool enabled) const {
  return with([&](Recipe& r) {
    if (enabled) r.amp_ = AmpOptions{};
    else r.amp_.reset();
  });
}

Recipe Recipe::amp(DType dtype) const { return amp(AmpOptions{.dtype = dtype}); }

Recipe Recipe::amp(AmpOptions options) const {
  return with([&](Recipe& r) { r.amp_ = options; });
}

Recipe Recipe::ema(EmaOptions options) const {
  return with([&](Recipe& r) {
    r.average_ = WeightAverage{.kind = WeightAverage::Kind::ema,
                               .decay = options.decay,
                               .warmup = options.warmup,
                               .validate = options.validate,
                               .overwrite_at_end = options.overwrite_at_end,
                               .overwrite_every = options.overwrite_every};
  });
}

Recipe Recipe::swa(SwaOptions options) const {
  return with([&](Recipe& r) {
    r.average_ = WeightAverage{.kind = WeightAverage::Kind::swa,
                               .start = options.start,
                               .validate = options.validate,
                               .overwrite_at_end = options.overwrite_at_end};
  });
}

Recipe Recipe::reference_batch(std::int64_t samples, ReferenceBatchOptions options) const {
  return with([&](Recipe& r) {
    r.reference_samples_ = samples;
    r.reference_options_ = options;
  });
}

std::string_view scaling_rule_name(ScalingRule rule) {
  switch (rule) {
    case ScalingRule::automatic: return "automatic";
    case ScalingRule::linear: return "linear";
    case ScalingRule::sqrt: return "sqrt";
  }
  return "?";
}

ScalingRule Recipe::scaling_rule() const {
  if (reference_options_.rule != ScalingRule::automatic) return reference_options_.rule;
  // Goyal et al.'s linear rule for SGD and LARS (made for it); the square root for optimizers that
  // normalize by the gradient's second moment (the LAMB paper scales its lr so).
  return optimizer_.get<SGD>() != nullptr || optimizer_.get<LARS>() != nullptr ? ScalingRule::linear : ScalingRule::sqrt;
}

double Recipe::batch_scaling(std::int64_t samples) const {
  if (!reference_samples_) return 1.0;
  const double ratio = static_cast<double>(samples) / static_cast<double>(*reference_samples_);
  return scaling_rule() == ScalingRule::linear ? ratio : std::sqrt(ratio);
}

std::optional<DType> Recipe::amp_dtype(Device device) const {
  if (!amp_) return std::nullopt;
  if (amp_->dtype) return amp_->dtype;
  return device.is_cuda() ? DType::f16 : DType::bf16;
}

bool Recipe::scales_loss(Device device) const {
  const auto low = amp_dtype(device);
  if (!low) return false;
  return amp_->loss_scaling.value_or(*low == DType::f16);
}

void Recipe::validate() const {
  ACCRUE_CHECK(optimizer_.defined(), "the recipe has no optimizer");
  accumulation_.validate();
  if (clip_norm_)
    ACCRUE_CHECK(std::isfinite(*clip_norm_) && *clip_norm_ > 0.0,
                 "clip({}): the largest gradient norm must be a positive number", *clip_norm_);
  if (clip_value_)
    ACCRUE_CHECK(std::isfinite(*clip_value_) && *clip_value_ > 0.0,
                 "clip_value({}): the largest gradient value must be a positive number", *clip_value_);
  if (amp_ && amp_->dtype)
    ACCRUE_CHECK(is_low_precision(*amp_->dtype), "amp({}): mixed precision computes in float16 or bfloat16",
                 dtype_name(*amp_->dtype));
  if (amp_) GradScaler{amp_->scaler};  // checks the scaler's options
  if (memory_budget_)
    ACCRUE_CHECK(accumulation_.kind() == AccumulationSchedule::Kind::effective_batch && *memory_budget_ > 0,
                 "memory_budget({}) chooses the micro-batch for an effective batch: add .effective_batch(n) (and a "
                 "positive budget)",
                 *memory_budget_);
  if (average_) {
    ACCRUE_CHECK(average_->decay >= 0.0 && average_->decay < 1.0, "ema({{.decay = {}}}): the decay must be in [0, 1)",
                 average_->decay);
    ACCRUE_CHECK(average_->start >= 1, "swa({{.start = {}}}): the first averaged optimizer step is 1 or later",
                 average_->start);
    ACCRUE_CHECK(average_->overwrite_every >= 0, "ema({{.overwrite_every = {}}}): a number of optimizer steps, 0 for never",
                 average_->overwrite_every);
  }
  if (reference_samples_) {
    ACCRUE_CHECK(*reference_samples_ >= 1, "reference_batch({}): the reference batch is at least one sample",
                 *reference_samples_);
    ACCRUE_CHECK(std::isfinite(reference_options_.warmup_epochs) && reference_options_.warmup_epochs >= 0.0,
                 "reference_batch({}, {{.warmup_epochs = {}}}): the warmup is a number of epochs >= 0", *reference_samples_,
                 reference_options_.warmup_epochs);
  }
  ACCRUE_CHECK(!(clip_norm_ && clip_value_),
               "clip() and clip_value() are alternatives (as Lightning's gradient_clip_algorithm); keep one");
}

std::string Recipe::str() const {
  std::string s = optimizer_.str();
  if (accumulates()) {
    s += " accumulate=" + accumulation_.str();
    if (accumulate_options_.last_window != LastWindow::normalize)
      s += fmt::format(" last_window={}", last_window_name(accumulate_options_.last_window));
    if (accumulate_options_.normalization != Normalization::per_window)
      s += fmt::format(" normalization={}", normalization_name(accumulate_options_.normalization));
  }
  if (clip_norm_) s += fmt::format(" clip={:g}{}", *clip_norm_, clip_options_.error_if_nonfinite ? " (error if non-finite)" : "");
  if (clip_value_) s += fmt::format(" clip_value={:g}", *clip_value_);
  if (memory_budget_) s += fmt::format(" memory_budget={}", format_bytes(*memory_budget_));
  if (amp_) {
    s += amp_->dtype ? fmt::format(" amp={}", dtype_name(*amp_->dtype)) : std::string{" amp"};
    if (amp_->loss_scaling) s += *amp_->loss_scaling ? " (loss scaling)" : " (no loss scaling)";
  }
  if (average_ && average_->kind == WeightAverage::Kind::ema)
    s += fmt::format(" ema={:g}{}{}", average_->decay, average_->warmup ? " (warmup)" : "",
                     average_->overwrite_every > 0 ? fmt::format(" (into the weights every {} steps)", average_->overwrite_every)
                                                   : "");
  if (average_ && average_->kind == WeightAverage::Kind::swa) s += fmt::format(" swa from step {}", average_->start);
  if (reference_samples_) {
    s += fmt::format(" reference_batch={} ({} rule", *reference_samples_, scaling_rule_name(scaling_rule()));
    if (reference_options_.warmup_epochs > 0) s += fmt::format(", warmup {:g} epochs", reference_options_.warmup_epochs);
    s += ")";
  }
  return s;
}

bool operator==(const Recipe& a, const Recipe& b) {
  return a.optimizer_ == b.optimizer_ && a.accumulation_ == b.accumulation_ &&
         a.accumulate_options_ == b.accumulate_options_ &&
         a.clip_norm_ == b.clip_norm_ && a.clip_options_ == b.clip_options_ && a.clip_value_ == b.clip_value_ &&
         a.amp_ == b.amp_ && a.memory_budget_ == b.memory_budget_ && a.average_ == b.average_ &&
         a.reference_samples_ == b.reference_samples_ && a.reference_options_ == b.reference_options_;
}

// The first links of the built-in configurations' chains (recipe_steps.hpp).
ACCRUE_DEFINE_RECIPE_STEPS(, SGD)
ACCRUE_DEFINE_RECIPE_STEPS(, RMSprop)
ACCRUE_DEFINE_RECIPE_STEPS(, Adagrad)
ACCRUE_DEFINE_RECIPE_STEPS(, LARS)
ACCRUE_DEFINE_RECIPE_STEPS(, LAMB)
ACCRUE_DEFINE_RECIPE_STEPS(, Lion)
ACCRUE_DEFINE_RECIPE_STEPS(template <bool Decoupled>, AdamConfig<Decoupled>)
ACCRUE_INSTANTIATE_RECIPE_STEPS(AdamConfig<false>)
ACCRUE_INSTANTIATE_RECIPE_STEPS(AdamConfig<true>)

}  // namespace accrue::optim
