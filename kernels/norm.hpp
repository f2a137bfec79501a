#pragma once
// Normalization kernels over float32 tensors seen as (N, C, L): L is H x W for images, 1 for
// features. Batch normalization takes statistics per channel over (N, L); group normalization per
// sample and group of C / G channels over (C / G, L); layer normalization is group normalization
// with one group and the normalized elements as channels. gamma and beta (C) may be undefined.

#include <cstdint>

#include "../framework/core/tensor.hpp"
#include "common/norm.hpp"

namespace accrue::kernels {

using common::NormShape;

/// y = normalized x; mean and rstd (N groups) receive each set's statistics for backward.
void group_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y, const Tensor& mean,
                        const Tensor& rstd, const NormShape& s, float eps);
/// dx, and dgamma and dbeta when defined, overwritten.
void group_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                         const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         const NormShape& s);

/// Layer normalization of each of `rows` rows of x over its last `features` values, gamma and beta
/// (features) per value: group normalization's math with one group, the row's values as channels.
void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y, const Tensor& mean,
                        const Tensor& rstd, std::int64_t rows, std::int64_t features, float eps);
void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                         const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         std::int64_t rows, std::int64_t features);

/// Training mode: statistics of this batch (mean and rstd (C) saved for backward); running_mean
/// and running_var (C), when defined, move towards them by `momentum` (the variance unbiased).
void batch_norm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                                 const Tensor& mean, const Tensor& rstd, const Tensor& running_mean,
                                 const Tensor& running_var, const NormShape& s, float momentum, float eps);
/// dx, and dgamma and dbeta when defined, overwritten. `eps` is the forward pass's (cuDNN checks it
/// against the saved statistics' use).
void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                         const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         const NormShape& s, float eps);

}  // namespace accrue::kernels
