#pragma once
// Unscaling a gradient and checking it for inf and NaN in one pass (GradScaler's
// _amp_foreach_non_finite_check_and_unscale_).

#include "../../framework/core/macros.hpp"

namespace accrue::kernels::common {

/// g *= inverse_scale; returns true when the result is inf or NaN (a scaled inf stays inf).
ACCRUE_HD bool unscale_element(float* g, float inverse_scale) {
  const float v = *g * inverse_scale;
  *g = v;
  return !(v - v == 0.0f);
}

}  // namespace accrue::kernels::common
