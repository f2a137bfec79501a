#pragma once
// The arithmetic of batch, group and layer normalization, written once for both backends. Each
// normalizes a set of elements by its mean and variance (biased, as PyTorch normalizes):
// xhat = (x - mean) * rstd with rstd = 1 / sqrt(var + eps), then y = xhat * gamma + beta.

#include <cmath>
#include <cstdint>

#include "../../framework/core/macros.hpp"

namespace accrue::kernels::common {

/// The shape a normalization sees: N samples of C channels of L values each.
struct NormShape {
  std::int64_t N = 0, C = 0, L = 1;
  std::int64_t groups = 1;  // group normalization only
};

ACCRUE_HD float norm_rstd(float variance, float eps) { return 1.0f / sqrtf(variance + eps); }

/// The gradient of one element of a set with respect to x, given dxhat = dy * gamma and the set's
/// means of dxhat and of dxhat * xhat: rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)).
ACCRUE_HD float norm_input_grad(float dxhat, float xhat, float rstd, float mean_dxhat, float mean_dxhat_xhat) {
  return rstd * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat);
}

/// A running statistic after one batch: (1 - momentum) running + momentum batch (PyTorch's
/// convention: momentum is the weight of the new value).
ACCRUE_HD float running_update(float running, float batch, float momentum) {
  return (1.0f - momentum) * running + momentum * batch;
}

/// The unbiased variance that running statistics keep, from the biased one of n elements.
ACCRUE_HD float unbiased_variance(float biased, std::int64_t n) {
  return n > 1 ? biased * static_cast<float>(n) / static_cast<float>(n - 1) : biased;
}

}  // namespace accrue::kernels::common
