// Pooling over cuDNN: max (NaN propagating, like PyTorch) and average with or without the
// padding in the divisor.

#include "check.hpp"
#include "context.hpp"
#include "cudnn_descriptors.hpp"
#include "pool.hpp"

namespace accrue::kernels::cuda {
namespace {

cudnnPoolingMode_t cudnn_mode(PoolMode mode) {
  switch (mode) {
    case PoolMode::max: return CUDNN_POOLING_MAX_DETERMINISTIC;
    case PoolMode::average_include_pad: return CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    case PoolMode::average_exclude_pad: return CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  }
  return CUDNN_POOLING_MAX;
}

}  // namespace

void pool2d_forward(int device, const float* x, float* y, const Window2d& g, PoolMode mode) {
  if (g.N * g.C * g.P() * g.Q() == 0) return;
  const PoolingDescriptor pool{cudnn_mode(mode), g};
  const TensorDescriptor xd{g.N, g.C, g.H, g.W}, yd{g.N, g.C, g.P(), g.Q()};
  const float one = 1.0f, zero = 0.0f;
  ACCRUE_CUDA_CHECK(cudnnPoolingForward(context(device).cudnn, pool.get(), &one, xd.get(), x, &zero, yd.get(), y));
}

void pool2d_backward(int device, const float* x, const float* y, const float* dy, float* dx, const Window2d& g,
                     PoolMode mode, bool accumulate) {
  if (g.N * g.C * g.H * g.W == 0) return;
  const PoolingDescriptor pool{cudnn_mode(mode), g};
  const TensorDescriptor xd{g.N, g.C, g.H, g.W}, yd{g.N, g.C, g.P(), g.Q()};
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  ACCRUE_CUDA_CHECK(cudnnPoolingBackward(context(device).cudnn, pool.get(), &one, yd.get(), y, yd.get(), dy, xd.get(),
                                         x, &beta, xd.get(), dx));
}

}  // namespace accrue::kernels::cuda
