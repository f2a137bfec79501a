// Softmax and log-softmax over cuDNN: an (outer, D, inner) view is cuDNN's NCHW tensor
// (outer, D, inner, 1) with the softmax across channels.

#include <climits>

#include "check.hpp"
#include "context.hpp"
#include "cudnn_descriptors.hpp"
#include "softmax.hpp"

namespace accrue::kernels::cuda {
namespace {

// An (outer, D, inner) view as cuDNN's NCHW (outer, D, inner, 1).
TensorDescriptor softmax_view(std::int64_t outer, std::int64_t D, std::int64_t inner) {
  if (outer * D * inner > INT_MAX)
    throw_error(CUDNN_STATUS_NOT_SUPPORTED, "softmax over more than 2^31 elements (cuDNN takes int dimensions)",
                __FILE__, __LINE__);
  return TensorDescriptor{outer, D, inner, 1};
}

}  // namespace

void softmax_forward(int device, const float* x, float* y, std::int64_t outer, std::int64_t D, std::int64_t inner,
                     bool log) {
  if (outer * D * inner == 0) return;
  const TensorDescriptor desc = softmax_view(outer, D, inner);
  const float alpha = 1.0f, beta = 0.0f;
  ACCRUE_CUDA_CHECK(cudnnSoftmaxForward(context(device).cudnn, log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                        CUDNN_SOFTMAX_MODE_CHANNEL, &alpha, desc.get(), x, &beta, desc.get(), y));
}

void softmax_backward(int device, const float* y, const float* dy, float* dx, std::int64_t outer, std::int64_t D,
                      std::int64_t inner, bool log, bool accumulate) {
  if (outer * D * inner == 0) return;
  const TensorDescriptor desc = softmax_view(outer, D, inner);
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  ACCRUE_CUDA_CHECK(cudnnSoftmaxBackward(context(device).cudnn, log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                         CUDNN_SOFTMAX_MODE_CHANNEL, &alpha, desc.get(), y, desc.get(), dy, &beta,
                                         desc.get(), dx));
}

}  // namespace accrue::kernels::cuda
