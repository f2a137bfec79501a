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

/// For optional tensors (a bias, a norm's scale): the host data, or nullptr when undefined.
inline float* host_data_or_null(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }
/// The same in device memory: ptr<float>(t), or nullptr when undefined.
inline float* ptr_or_null(const Tensor& t) { return t.defined() ? ptr<float>(t) : nullptr; }

/// Throws NotSupported naming the kernel and the device: the backend for `device` lacks it.
[[noreturn]] void unsupported_device(std::string_view kernel, Device device);

/// Internal precondition of a kernel: all tensors defined, on `device`, of `dtype`.
void expect_tensors(std::string_view kernel, Device device, DType dtype, std::initializer_list<const Tensor*> tensors);

}  // namespace accrue::kernels
