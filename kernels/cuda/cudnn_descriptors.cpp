#include "cudnn_descriptors.hpp"

#include <climits>

namespace accrue::kernels::cuda {

int cudnn_dim(std::int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX) throw_error(CUDNN_STATUS_NOT_SUPPORTED, what, __FILE__, __LINE__);
  return static_cast<int>(n);
}

TensorDescriptor::TensorDescriptor(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  const char* what = "a tensor dimension beyond 2^31 (cuDNN takes int dimensions)";
  ACCRUE_CUDA_CHECK(cudnnCreateTensorDescriptor(&desc_));
  ACCRUE_CUDA_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, cudnn_dim(n, what),
                                               cudnn_dim(c, what), cudnn_dim(h, what), cudnn_dim(w, what)));
}

FilterDescriptor::FilterDescriptor(std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s) {
  const char* what = "a filter dimension beyond 2^31 (cuDNN takes int dimensions)";
  ACCRUE_CUDA_CHECK(cudnnCreateFilterDescriptor(&desc_));
  ACCRUE_CUDA_CHECK(cudnnSetFilter4dDescriptor(desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, cudnn_dim(k, what),
                                               cudnn_dim(c, what), cudnn_dim(r, what), cudnn_dim(s, what)));
}

ConvolutionDescriptors::ConvolutionDescriptors(const Window2d& g)
    : x(g.N, g.C, g.H, g.W), y(g.N, g.K, g.P(), g.Q()), w(g.K, g.channels_per_group(), g.R, g.S) {
  ACCRUE_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&conv_));
  ACCRUE_CUDA_CHECK(cudnnSetConvolution2dDescriptor(
      conv_, static_cast<int>(g.pad_h), static_cast<int>(g.pad_w), static_cast<int>(g.stride_h),
      static_cast<int>(g.stride_w), static_cast<int>(g.dilation_h), static_cast<int>(g.dilation_w),
      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  ACCRUE_CUDA_CHECK(cudnnSetConvolutionGroupCount(conv_, static_cast<int>(g.groups)));
  ACCRUE_CUDA_CHECK(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH));
}

PoolingDescriptor::PoolingDescriptor(cudnnPoolingMode_t mode, const Window2d& g) {
  ACCRUE_CUDA_CHECK(cudnnCreatePoolingDescriptor(&desc_));
  ACCRUE_CUDA_CHECK(cudnnSetPooling2dDescriptor(desc_, mode, CUDNN_PROPAGATE_NAN, static_cast<int>(g.R),
                                                static_cast<int>(g.S), static_cast<int>(g.pad_h),
                                                static_cast<int>(g.pad_w), static_cast<int>(g.stride_h),
                                                static_cast<int>(g.stride_w)));
}

}  // namespace accrue::kernels::cuda
