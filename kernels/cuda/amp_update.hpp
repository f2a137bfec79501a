#pragma once
// Unscaling gradients and finding inf or NaN in them, over many tensors, as the CUDA backend's host functions (amp_update.cu), called by kernels/amp_update.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>
#include <span>

namespace accrue::kernels::cuda {

/// g *= inverse_scale over all tensors; true when any result is inf or NaN. `flag` is one device
/// int. Waits for the device.
bool unscale_and_check(int device, std::span<float* const> tensors, std::span<const std::int64_t> sizes,
                       float inverse_scale, int* flag);

}  // namespace accrue::kernels::cuda
