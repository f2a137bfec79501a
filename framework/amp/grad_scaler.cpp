#include "grad_scaler.hpp"

#include <cmath>

#include "../autograd/gradients.hpp"
#include "../../kernels/amp_update.hpp"

namespace accrue {

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale) {
  ACCRUE_CHECK(std::isfinite(options.init_scale) && options.init_scale > 0, "GradScaler: init_scale must be positive, got {}",
               options.init_scale);
  ACCRUE_CHECK(options.growth_factor > 1.0, "GradScaler: growth_factor must be above 1, got {}", options.growth_factor);
  ACCRUE_CHECK(options.backoff_factor > 0.0 && options.backoff_factor < 1.0,
               "GradScaler: backoff_factor must be in (0, 1), got {}", options.backoff_factor);
  ACCRUE_CHECK(options.growth_interval >= 1, "GradScaler: growth_interval must be at least 1, got {}",
               options.growth_interval);
}

bool GradScaler::unscale(const std::vector<Tensor>& parameters) const {
  const float inverse = static_cast<float>(1.0 / scale_);
  return kernels::unscale_and_check(defined_gradients(parameters), inverse);
}

void GradScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    ++skipped_;
    return;
  }
  if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
}

void GradScaler::load_state(const State& state) {
  ACCRUE_CHECK(std::isfinite(state.scale) && state.scale > 0 && state.growth_tracker >= 0,
               "GradScaler: a state with scale {} and growth tracker {} is not valid", state.scale, state.growth_tracker);
  scale_ = state.scale;
  growth_tracker_ = state.growth_tracker;
  skipped_ = state.skipped_steps;
}

}  // namespace accrue
