#pragma once
// Shared pieces of the per-device dispatch that every kernels/<op>.cpp does.

#include <string_view>

#include "accrue/framework/tensor.hpp"

namespace accrue::kernels {

/// Throws NotSupported naming the kernel and the device: the backend for `device` lacks it.
[[noreturn]] void unsupported_device(std::string_view kernel, Device device);

/// Internal precondition of a kernel: all tensors defined, on `device`, of `dtype`.
void expect_tensors(std::string_view kernel, Device device, DType dtype, std::initializer_list<const Tensor*> tensors);

}  // namespace accrue::kernels
