#pragma once
// 2-D convolution over NCHW tensors, as PyTorch's conv2d (cross-correlation): x (N, C, H, W),
// weight (K, C / groups, R, S), y (N, K, P, Q). On the CPU: im2col and GEMM, one sample per pool
// thread; on a GPU: cuDNN. Float32, or on the CPU also bfloat16 (conv2d_runs_bf16): y and dy
// bfloat16, x and dx float32 or bfloat16, products in bfloat16 with float32 accumulation, the weight
// float32 (the master copy, rounded as it is packed) and its gradient float32.

#include <cstdint>

#include "../framework/core/tensor.hpp"
#include "common/conv_geometry.hpp"

namespace accrue::kernels {

/// Whether these kernels take bfloat16 y and dy on `device`: on the CPU where the processor has a
/// bfloat16 kernel (cpu::bf16_kernel). cuDNN's bfloat16 convolutions are not wired in.
bool conv2d_runs_bf16(Device device);

/// y = conv(x, w) + bias; `bias` (K) may be undefined.
void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Window2d& g);
/// dx (+)= the gradient of conv2d with respect to its input.
void conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx, const Window2d& g, bool accumulate);
/// dw (+)= the gradient with respect to the weight.
void conv2d_backward_filter(const Tensor& dy, const Tensor& x, const Tensor& dw, const Window2d& g, bool accumulate);
/// db (+)= dy summed over N, P and Q.
void conv2d_backward_bias(const Tensor& dy, const Tensor& db, const Window2d& g, bool accumulate);

/// Bytes of temporaries these kernels allocate on `device` for `g`, for memory plans: on the CPU the
/// padded images, packed weights or im2col matrices of each pass and the filter gradient's per-thread
/// sums; on a GPU none counted (cuDNN's workspaces depend on the algorithm it picks).
struct ConvWorkspace {
  std::size_t forward = 0, backward = 0;
  /// Of backward, the input's gradient alone (0: counted in `backward`), which a first layer skips.
  std::size_t backward_data = 0;
  /// The weight's packs kept through a window for forward and for the input's gradient (bfloat16).
  std::size_t kept_forward = 0, kept_for_input_gradient = 0;
};
ConvWorkspace conv2d_workspace_bytes(Device device, const Window2d& g);
/// The same for the bfloat16 kernels, with x (and dx) in `x_type`.
ConvWorkspace conv2d_bf16_workspace_bytes(const Window2d& g, DType x_type);

}  // namespace accrue::kernels
