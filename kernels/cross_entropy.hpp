#pragma once
// Fused softmax cross-entropy from logits with integer labels (math in common/cross_entropy.hpp).

#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

/// loss[b] = cross-entropy of row b of logits (B, C) against labels[b]; lse[b] keeps the row's
/// log-sum-exp for backward. A row whose label is `ignore` gets 0. Throws ValueError naming the
/// first sample whose label is outside [0, C) and not `ignore`, before writing anything.
void cross_entropy_forward(const Tensor& logits, const Tensor& labels, float smoothing, std::int64_t ignore,
                           const Tensor& loss, const Tensor& lse);
/// dlogits[b, :] (+)= g[b] * dloss[b]/dlogits[b, :]; 0 for a row whose label is `ignore`.
void cross_entropy_backward(const Tensor& logits, const Tensor& labels, float smoothing, std::int64_t ignore,
                            const Tensor& lse, const Tensor& g, const Tensor& dlogits, bool accumulate);

}  // namespace accrue::kernels
