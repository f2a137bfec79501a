#pragma once
// Shared pieces of the per-device dispatch that every kernels/<op>.cpp does.

#include <string_view>

#include "accrue/config.hpp"
#include "accrue/framework/tensor.hpp"
#if ACCRUE_WITH_CUDA
#include "accrue/kernels/cuda/launchers.hpp"
#endif

namespace accrue::kernels {

/// t's elements in its device memory: the kernels' view (Tensor::data<T>() is the host's, and
/// refuses GPU tensors).
template <class T>
T* ptr(const Tensor& t) {
  return t.device_data<T>();
}

/// Throws NotSupported naming the kernel and the device: the backend for `device` lacks it.
[[noreturn]] void unsupported_device(std::string_view kernel, Device device);

/// Internal precondition of a kernel: all tensors defined, on `device`, of `dtype`.
void expect_tensors(std::string_view kernel, Device device, DType dtype, std::initializer_list<const Tensor*> tensors);

}  // namespace accrue::kernels
