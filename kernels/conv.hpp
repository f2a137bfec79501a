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

/// Bytes of temporaries these kernels allocate on `device` for `g`, for memory plans: on the CPU the
/// im2col matrices (forward, backward data) and the filter gradient's partial sums; on a GPU none
/// counted (cuDNN's workspaces depend on the algorithm it picks).
struct ConvWorkspace {
  std::size_t forward = 0, backward = 0;
};
ConvWorkspace conv2d_workspace_bytes(Device device, const Window2d& g);

}  // namespace accrue::kernels
