#pragma once
// Owning wrappers of cuDNN descriptors for the layers with cuDNN forms (convolution, pooling,
// batch normalization). A descriptor is created per call: it costs about a microsecond, and
// nothing is cached that could go stale.

#include <cudnn.h>

#include <cstdint>

#include "../common/conv_geometry.hpp"
#include "check.hpp"

namespace accrue::kernels::cuda {

/// cuDNN takes int dimensions: refuses larger ones with CUDNN_STATUS_NOT_SUPPORTED naming `what`.
int cudnn_dim(std::int64_t n, const char* what);

class TensorDescriptor {
 public:
  /// A float32 NCHW tensor.
  TensorDescriptor(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w);
  ~TensorDescriptor() { (void)cudnnDestroyTensorDescriptor(desc_); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

class FilterDescriptor {
 public:
  /// A float32 KCRS filter.
  FilterDescriptor(std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s);
  ~FilterDescriptor() { (void)cudnnDestroyFilterDescriptor(desc_); }
  FilterDescriptor(const FilterDescriptor&) = delete;
  FilterDescriptor& operator=(const FilterDescriptor&) = delete;
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

/// The input, output and filter of a convolution with its padding, stride, dilation and groups.
/// Math is float32 with FMA (no TF32), as the cuBLAS GEMMs, so that results match the CPU's.
class ConvolutionDescriptors {
 public:
  explicit ConvolutionDescriptors(const Window2d& g);
  ~ConvolutionDescriptors() { (void)cudnnDestroyConvolutionDescriptor(conv_); }
  ConvolutionDescriptors(const ConvolutionDescriptors&) = delete;
  ConvolutionDescriptors& operator=(const ConvolutionDescriptors&) = delete;

  TensorDescriptor x, y;
  FilterDescriptor w;
  cudnnConvolutionDescriptor_t conv() const { return conv_; }

 private:
  cudnnConvolutionDescriptor_t conv_ = nullptr;
};

class PoolingDescriptor {
 public:
  PoolingDescriptor(cudnnPoolingMode_t mode, const Window2d& g);
  ~PoolingDescriptor() { (void)cudnnDestroyPoolingDescriptor(desc_); }
  PoolingDescriptor(const PoolingDescriptor&) = delete;
  PoolingDescriptor& operator=(const PoolingDescriptor&) = delete;
  cudnnPoolingDescriptor_t get() const { return desc_; }

 private:
  cudnnPoolingDescriptor_t desc_ = nullptr;
};

}  // namespace accrue::kernels::cuda
