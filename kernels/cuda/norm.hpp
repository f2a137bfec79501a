#pragma once
// Group, layer and batch normalization, as the CUDA backend's host functions (norm.cu; batch norm over cuDNN), called by kernels/norm.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>

namespace accrue::kernels::cuda {

// Tensors are (N, C, L); gamma, beta, dgamma and dbeta of group_norm may be null.
void group_norm_forward(int device, const float* x, const float* gamma, const float* beta, float* y, float* mean,
                        float* rstd, std::int64_t N, std::int64_t C, std::int64_t L, std::int64_t groups, float eps);
void group_norm_backward(int device, const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t L, std::int64_t groups);
/// running_mean and running_var may both be null; eps at least CUDNN_BN_MIN_EPSILON (0 in cuDNN 9).
/// Backward takes the forward's eps, as cuDNN asks.
void batch_norm_forward_training(int device, const float* x, const float* gamma, const float* beta, float* y,
                                 float* mean, float* rstd, float* running_mean, float* running_var, std::int64_t N,
                                 std::int64_t C, std::int64_t L, float momentum, float eps);
void batch_norm_backward(int device, const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t L, float eps);

}  // namespace accrue::kernels::cuda
