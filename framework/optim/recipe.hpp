#pragma once
// optim::Recipe: an optimizer together with how its steps are formed, built as a chain and given to
// compile(): `model.compile(optim::SGD{.lr = 1e-3}.accumulate(4).clip(1.0), loss, metrics)`.
//
// The chain is a value: copies are independent, == compares them, str() prints
// "SGD(lr=0.001) accumulate=4 clip=1.0". The order of every optimizer step is fixed by the
// framework, whatever the order of the chain: close_window (framework/training/window_close.hpp)
// is the one place it is written. Clipping per micro-batch or before unscaling cannot be expressed.

#include <optional>
#include <ostream>
#include <string>

#include "adam.hpp"
#include "layerwise.hpp"
#include "lion.hpp"
#include "optimizer.hpp"
#include "recipe_steps.hpp"
#include "rmsprop.hpp"
#include "sgd.hpp"
#include "../core/printable.hpp"
#include "accumulation.hpp"

namespace accrue::optim {

class Recipe {
 public:
  Recipe() = default;
  /// A recipe with just the optimizer: no accumulation, no clipping.
  template <OptimizerConfig T>
  Recipe(T optimizer)  // NOLINT: implicit on purpose, so compile() takes a bare optimizer
      : optimizer_(std::move(optimizer)) {}
  Recipe(AnyOptimizer optimizer) : optimizer_(std::move(optimizer)) {}  // NOLINT

  /// Micro-batches per optimizer step: an int, a per-epoch dictionary `{{0, 8}, {4, 2}}`,
  /// AccumulationSchedule::by_step(...), AccumulationSchedule::effective_batch(n) or a function of
  /// the epoch; with the end-of-epoch policy and the loss normalization.
  Recipe accumulate(AccumulationSchedule schedule, AccumulateOptions options = {}) const;
  /// Micro-batches per optimizer step until `samples`: accumulate(AccumulationSchedule::effective_batch(samples)).
  Recipe effective_batch(std::int64_t samples) const;
  /// The memory planner: fit chooses the micro-batch (its batch_size is ignored) among the divisors
  /// of the effective batch, and the recomputation, whose Model::memory_plan peaks within
  /// `bytes`, timing the promising ones and training with the fastest (FitOptions::planner); the
  /// banner shows the candidates. It refuses when nothing fits. Needs effective_batch(n).
  Recipe memory_budget(std::size_t bytes) const;
  /// Clips the global L2 norm of the accumulated gradient to `max_norm` before each step.
  Recipe clip(double max_norm, ClipOptions options = {}) const;
  /// Clamps each accumulated gradient element to [-value, value] before each step.
  Recipe clip_value(double value) const;
  /// Mixed precision (see framework/ops/autocast.hpp and amp/grad_scaler.hpp): `.amp()` is bfloat16
  /// without loss scaling on the CPU and float16 with it on CUDA; `.amp(dtype::f16)` or
  /// `.amp(dtype::bf16)` chooses; `.amp(false)` is plain float32.
  Recipe amp(bool enabled = true) const;
  Recipe amp(DType dtype) const;
  Recipe amp(AmpOptions options) const;
  /// An exponential moving average of the weights, updated after each applied optimizer step
  /// (never per micro-batch, never on a skipped step): used for validation and, at the end of fit,
  /// as the model's weights (EmaOptions says which); kept in checkpoints.
  Recipe ema(EmaOptions options = {}) const;
  /// Stochastic weight averaging: the equal average of the weights after each step from
  /// `options.start` on, used as ema's is. BatchNorm's statistics for the averaged weights come from
  /// Model::update_batch_norm(train) after fit (torch.optim.swa_utils.update_bn).
  Recipe swa(SwaOptions options = {}) const;
  /// The optimizer's learning rate is the one for `samples` samples per step: each window steps
  /// with it scaled by the rule (linear for SGD and LARS, square root for the adaptive optimizers)
  /// at that window's planned effective batch (micro-batch x accumulation x processes), so an
  /// accumulation schedule rescales at each change; with options.warmup_epochs, Goyal et al.'s
  /// gradual warmup reaches the full scaling after that many epochs.
  Recipe reference_batch(std::int64_t samples, ReferenceBatchOptions options = {}) const;

  const AnyOptimizer& optimizer() const { return optimizer_; }
  const AccumulationSchedule& accumulation() const { return accumulation_; }
  const AccumulateOptions& accumulate_options() const { return accumulate_options_; }
  /// Whether accumulate() was part of the chain.
  bool accumulates() const { return accumulation_.is_set(); }
  std::optional<std::size_t> memory_budget() const { return memory_budget_; }
  std::optional<double> clip_norm() const { return clip_norm_; }
  const ClipOptions& clip_options() const { return clip_options_; }
  std::optional<double> clip_value_limit() const { return clip_value_; }
  /// The mixed-precision settings, when amp is on.
  const std::optional<AmpOptions>& amp_options() const { return amp_; }
  /// The moving average of the weights, when ema() or swa() was part of the chain.
  const std::optional<WeightAverage>& weight_average() const { return average_; }
  /// The reference batch, when reference_batch() was part of the chain.
  std::optional<std::int64_t> reference_samples() const { return reference_samples_; }
  const ReferenceBatchOptions& reference_options() const { return reference_options_; }
  /// The rule reference_batch() applies: the one asked for, or the optimizer's.
  ScalingRule scaling_rule() const;
  /// The learning-rate factor for an effective batch of `samples` (1 without a reference batch).
  double batch_scaling(std::int64_t samples) const;
  /// The low-precision type on `device` (nothing without amp).
  std::optional<DType> amp_dtype(Device device) const;
  /// Whether losses are scaled on `device`.
  bool scales_loss(Device device) const;

  /// Throws ValueError saying what to change: accumulate below 1, a negative or unordered key, a
  /// clip norm or value that is not positive, or both clip() and clip_value().
  void validate() const;
  /// "SGD(lr=0.001) accumulate=4 clip=1.0"
  std::string str() const;
  friend bool operator==(const Recipe&, const Recipe&);

 private:
  // A Recipe is a value: each option returns a copy with `change` made to it.
  template <class Change>
  Recipe with(Change&& change) const {
    Recipe r = *this;
    std::forward<Change>(change)(r);
    return r;
  }

  AnyOptimizer optimizer_;
  AccumulationSchedule accumulation_;
  AccumulateOptions accumulate_options_;
  std::optional<double> clip_norm_;
  ClipOptions clip_options_;
  std::optional<double> clip_value_;
  std::optional<AmpOptions> amp_;
  std::optional<std::size_t> memory_budget_;
  std::optional<WeightAverage> average_;
  std::optional<std::int64_t> reference_samples_;
  ReferenceBatchOptions reference_options_;
};

/// "linear", "sqrt", "automatic".
std::string_view scaling_rule_name(ScalingRule rule);

inline std::ostream& operator<<(std::ostream& os, const Recipe& r) { return os << r.str(); }

}  // namespace accrue::optim

template <>
struct fmt::formatter<accrue::optim::Recipe> : accrue::StrFormatter<accrue::optim::Recipe> {};
