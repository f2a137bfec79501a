#pragma once
// Fused softmax cross-entropy, as the CUDA backend's host functions (cross_entropy.cu), called by kernels/cross_entropy.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>

namespace accrue::kernels::cuda {

/// Position of the first of B labels (or embedding indices) outside [0, C), or -1; `scratch` is one device int. Waits for the device.
/// As the CPU's (cpu/cross_entropy.hpp); waits for the answer.
std::int64_t first_out_of_range(int device, const std::int32_t* labels, std::int64_t B, std::int64_t C, int* scratch,
                                std::int64_t ignore);
void cross_entropy_forward(int device, const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C,
                           float smoothing, std::int64_t ignore, float* loss, float* lse);
void cross_entropy_backward(int device, const float* logits, const std::int32_t* labels, std::int64_t B,
                            std::int64_t C, float smoothing, std::int64_t ignore, const float* lse, const float* g,
                            float* dlogits, bool accumulate);

}  // namespace accrue::kernels::cuda
