#pragma once
// 2-D max and average pooling over NCHW tensors (N, C, H, W) -> (N, C, P, Q); the window is R x S
// (Window2d, without K and groups). Float32, or bfloat16 on the CPU (the support table's row). On
// a GPU: cuDNN.

#include "../framework/core/tensor.hpp"
#include "common/pool.hpp"

namespace accrue::kernels {

void pool2d_forward(const Tensor& x, const Tensor& y, const Window2d& g, PoolMode mode);
/// dx (+)= the gradient of pooling given its input x, output y and dy (max pooling routes each
/// window's gradient to its winner, found again in x).
void pool2d_backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const Window2d& g,
                     PoolMode mode, bool accumulate);

}  // namespace accrue::kernels
