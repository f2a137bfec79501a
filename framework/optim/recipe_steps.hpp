#pragma once
// The chain that starts at an optimizer configuration: `optim::SGD{.lr = 1e-3}.accumulate(4).clip(1.0)`
// is an optim::Recipe (recipe.hpp). Each configuration declares the first links with this macro,
// defined once for all of them in recipe.cpp; a base class would cost users a
// -Wmissing-field-initializers warning on every designated initialiser.

#include "accrue/framework/training/accumulation.hpp"

namespace accrue::optim {

class Recipe;

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
  /** Clips the accumulated gradient's global L2 norm to max_norm before each step. */                     \
  ::accrue::optim::Recipe clip(double max_norm, ::accrue::optim::ClipOptions options = {}) const;          \
  /** Clamps every accumulated gradient element to [-value, value] before each step. */                    \
  ::accrue::optim::Recipe clip_value(double value) const;
