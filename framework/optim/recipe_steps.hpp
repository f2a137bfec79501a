#pragma once
// The chain that starts at an optimizer configuration: `optim::SGD{.lr = 1e-3}.accumulate(4).clip(1.0)`
// is an optim::Recipe (recipe.hpp). Each configuration declares the first links with
// ACCRUE_RECIPE_STEPS and defines them with ACCRUE_DEFINE_RECIPE_STEPS: the built-in ones in
// recipe.cpp (so that a configuration does not include the Recipe it starts), a user's own in a
// .cpp that includes recipe.hpp. A base class would cost users a -Wmissing-field-initializers
// warning on every designated initializer.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "../amp/grad_scaler.hpp"
#include "../core/dtype.hpp"
#include "optimizer.hpp"
#include "accumulation.hpp"

namespace accrue::optim {

class Recipe;

struct AmpOptions {
  /// float16 or bfloat16; unset: bfloat16 on the CPU, float16 on CUDA.
  std::optional<DType> dtype = {};
  /// Dynamic loss scaling; unset: on for float16, off for bfloat16 (whose range is float32's).
  std::optional<bool> loss_scaling = {};
  GradScalerOptions scaler = {};
  friend bool operator==(const AmpOptions&, const AmpOptions&) = default;
};

/// `.ema({.decay = 0.999})`: an exponential moving average of the weights.
struct EmaOptions {
  double decay = 0.999;
  bool warmup = false;
  bool validate = true;
  bool overwrite_at_end = true;
  /// Set the weights to the average every this many optimizer steps (Keras's ema_overwrite_frequency).
  std::int64_t overwrite_every = 0;
};

/// `.swa({.start = 500})`: stochastic weight averaging (torch.optim.swa_utils.AveragedModel), the
/// equal average of the weights after each step from `start` on.
struct SwaOptions {
  std::int64_t start = 1;
  bool validate = true;
  bool overwrite_at_end = true;
};

/// How the learning rate follows the effective batch B against a reference batch R (Recipe::reference_batch).
enum class ScalingRule {
  /// The optimizer's: linear for SGD and LARS, square root for the adaptive ones.
  automatic,
  /// lr B / R (Goyal et al. 2017, arXiv 1706.02677).
  linear,
  /// lr sqrt(B / R) (for Adam-like optimizers: Hoffer et al. 2017, Malladi et al. 2022).
  sqrt,
};

struct ReferenceBatchOptions {
  ScalingRule rule = ScalingRule::automatic;
  /// Goyal et al.'s gradual warmup: the scaling grows linearly from 1 (the reference learning rate)
  /// to its full value over this many epochs' optimizer steps; 0 for none.
  double warmup_epochs = 0.0;
  friend bool operator==(const ReferenceBatchOptions&, const ReferenceBatchOptions&) = default;
};

struct ClipOptions {
  /// Raise (as clip_grad_norm_'s error_if_nonfinite) instead of skipping the step when the
  /// gradient norm is inf or NaN.
  bool error_if_nonfinite = false;
  friend bool operator==(const ClipOptions&, const ClipOptions&) = default;
};

}  // namespace accrue::optim

/// The first links of the chain, declared in every optimizer configuration.
#define ACCRUE_RECIPE_STEPS                                                                               \
  /** Accumulates gradients over `schedule` micro-batches per optimizer step (see Recipe). */            \
  ::accrue::optim::Recipe accumulate(::accrue::AccumulationSchedule schedule,                             \
                                     ::accrue::AccumulateOptions options = {}) const;                     \
  /** Accumulates micro-batches until `samples` per step: accumulate(effective_batch(samples)). */        \
  ::accrue::optim::Recipe effective_batch(std::int64_t samples) const;                                    \
  /** Lets fit choose micro-batch and recomputation within `bytes`, the fastest (see Recipe). */        \
  ::accrue::optim::Recipe memory_budget(std::size_t bytes) const;                                         \
  /** Clips the accumulated gradient's global L2 norm to max_norm before each step. */                     \
  ::accrue::optim::Recipe clip(double max_norm, ::accrue::optim::ClipOptions options = {}) const;          \
  /** Clamps every accumulated gradient element to [-value, value] before each step. */                    \
  ::accrue::optim::Recipe clip_value(double value) const;                                                 \
  /** Mixed precision: .amp() (the device's default), .amp(dtype::f16), .amp(false), .amp({...}). */      \
  ::accrue::optim::Recipe amp(bool enabled = true) const;                                                 \
  ::accrue::optim::Recipe amp(::accrue::DType dtype) const;                                               \
  ::accrue::optim::Recipe amp(::accrue::optim::AmpOptions options) const;                                 \
  /** An exponential moving average of the weights, updated once per applied step (see Recipe). */       \
  ::accrue::optim::Recipe ema(::accrue::optim::EmaOptions options = {}) const;                            \
  /** Stochastic weight averaging: the equal average of the weights from a step on (see Recipe). */      \
  ::accrue::optim::Recipe swa(::accrue::optim::SwaOptions options = {}) const;                            \
  /** The learning rate is the one for `samples` per step, scaled to the effective batch (see Recipe). */ \
  ::accrue::optim::Recipe reference_batch(std::int64_t samples, ::accrue::optim::ReferenceBatchOptions options = {}) const;

/// Defines the first links for `Config` (in a .cpp that includes recipe.hpp); `Prefix` is empty, or
/// the template head when Config is a template.
#define ACCRUE_DEFINE_RECIPE_STEPS(Prefix, Config)                                                            \
  Prefix ::accrue::optim::Recipe Config::accumulate(::accrue::AccumulationSchedule schedule,                 \
                                                    ::accrue::AccumulateOptions options) const {             \
    return ::accrue::optim::Recipe{*this}.accumulate(std::move(schedule), options);                          \
  }                                                                                                          \
  Prefix ::accrue::optim::Recipe Config::effective_batch(std::int64_t samples) const {                       \
    return ::accrue::optim::Recipe{*this}.effective_batch(samples);                                          \
  }                                                                                                          \
  Prefix ::accrue::optim::Recipe Config::memory_budget(std::size_t bytes) const {                            \
    return ::accrue::optim::Recipe{*this}.memory_budget(bytes);                                              \
  }                                                                                                          \
  Prefix ::accrue::optim::Recipe Config::clip(double max_norm, ::accrue::optim::ClipOptions options) const {  \
    return ::accrue::optim::Recipe{*this}.clip(max_norm, options);                                           \
  }                                                                                                          \
  Prefix ::accrue::optim::Recipe Config::clip_value(double value) const {                                    \
    return ::accrue::optim::Recipe{*this}.clip_value(value);                                                 \
  }                                                                                                          \
  Prefix ::accrue::optim::Recipe Config::amp(bool enabled) const { return ::accrue::optim::Recipe{*this}.amp(enabled); } \
  Prefix ::accrue::optim::Recipe Config::amp(::accrue::DType dtype) const {                                  \
    return ::accrue::optim::Recipe{*this}.amp(dtype);                                                        \
  }                                                                                                          \
  Prefix ::accrue::optim::Recipe Config::amp(::accrue::optim::AmpOptions options) const {                    \
    return ::accrue::optim::Recipe{*this}.amp(options);                                                      \
  }                                                                                                          \
  Prefix ::accrue::optim::Recipe Config::ema(::accrue::optim::EmaOptions options) const {                    \
    return ::accrue::optim::Recipe{*this}.ema(options);                                                      \
  }                                                                                                          \
  Prefix ::accrue::optim::Recipe Config::swa(::accrue::optim::SwaOptions options) const {                    \
    return ::accrue::optim::Recipe{*this}.swa(options);                                                      \
  }                                                                                                          \
  Prefix ::accrue::optim::Recipe Config::reference_batch(std::int64_t samples,                               \
                                                         ::accrue::optim::ReferenceBatchOptions options) const { \
    return ::accrue::optim::Recipe{*this}.reference_batch(samples, options);                                 \
  }

/// Instantiates the links ACCRUE_DEFINE_RECIPE_STEPS defined for a template, for one `Config`.
#define ACCRUE_INSTANTIATE_RECIPE_STEPS(Config)                                                                 \
  template ::accrue::optim::Recipe Config::accumulate(::accrue::AccumulationSchedule, ::accrue::AccumulateOptions) \
      const;                                                                                                   \
  template ::accrue::optim::Recipe Config::effective_batch(std::int64_t) const;                                \
  template ::accrue::optim::Recipe Config::memory_budget(std::size_t) const;                                   \
  template ::accrue::optim::Recipe Config::clip(double, ::accrue::optim::ClipOptions) const;                   \
  template ::accrue::optim::Recipe Config::clip_value(double) const;                                           \
  template ::accrue::optim::Recipe Config::amp(bool) const;                                                    \
  template ::accrue::optim::Recipe Config::amp(::accrue::DType) const;                                         \
  template ::accrue::optim::Recipe Config::amp(::accrue::optim::AmpOptions) const;                            \
  template ::accrue::optim::Recipe Config::ema(::accrue::optim::EmaOptions) const;                            \
  template ::accrue::optim::Recipe Config::swa(::accrue::optim::SwaOptions) const;                            \
  template ::accrue::optim::Recipe Config::reference_batch(std::int64_t, ::accrue::optim::ReferenceBatchOptions) const;
