#pragma once
// 2-D convolution over NCHW float32 tensors, as PyTorch's conv2d (cross-correlation): x (N, C, H, W),
// weight (K, C / groups, R, S), y (N, K, P, Q). On the CPU: im2col and GEMM, one sample per pool
// thread; on a GPU: cuDNN.

#include <cstdint>

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/common/conv_geometry.hpp"

namespace accrue::kernels {

/// y = conv(x, w) + bias; `bias` (K) may be undefined.
void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Window2d& g);
/// dx (+)= the gradient of conv2d with respect to its input.
void conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx, const Window2d& g, bool accumulate);
/// dw (+)= the gradient with respect to the weight.
void conv2d_backward_filter(const Tensor& dy, const Tensor& x, const Tensor& dw, const Window2d& g, bool accumulate);
/// db (+)= dy summed over N, P and Q.
void conv2d_backward_bias(const Tensor& dy, const Tensor& db, const Window2d& g, bool accumulate);

namespace cpu {
/// `workspace` holds patch_size() * P * Q floats per pool thread (conv2d_workspace_floats).
std::int64_t conv2d_workspace_floats(const Window2d& g);
void conv2d_forward(const float* x, const float* w, const float* bias, float* y, const Window2d& g, float* workspace);
void conv2d_backward_data(const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate,
                          float* workspace);
/// `partials` holds one weight-sized buffer per pool thread beyond the first (conv2d_partial_floats).
std::int64_t conv2d_partial_floats(const Window2d& g);
void conv2d_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                            float* workspace, float* partials);
void conv2d_backward_bias(const float* dy, float* db, const Window2d& g, bool accumulate);
/// The im2col matrix of one sample and group: (patch_size(), P Q), zeros where taps fall in the padding.
void im2col(const float* x, const Window2d& g, float* col);
/// The inverse scatter: dx += col's entries at their taps' input positions.
void col2im_add(const float* col, const Window2d& g, float* dx);
}  // namespace cpu

}  // namespace accrue::kernels
