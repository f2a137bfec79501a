#pragma once
// Softmax and log-softmax, as the CUDA backend's host functions (softmax.cpp, over cuDNN), called by kernels/softmax.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>

namespace accrue::kernels::cuda {

void softmax_forward(int device, const float* x, float* y, std::int64_t outer, std::int64_t D, std::int64_t inner,
                     bool log);
void softmax_backward(int device, const float* y, const float* dy, float* dx, std::int64_t outer, std::int64_t D,
                      std::int64_t inner, bool log, bool accumulate);

/// Attention's masked softmax (softmax.cu; the others in softmax.cpp call cuDNN): one thread per row, the math of
/// common/softmax.hpp.
void masked_softmax_forward(int device, const float* x, const float* mask, float* y, std::int64_t rows, std::int64_t D,
                            std::int64_t T_q, float scale, bool causal);
void masked_softmax_backward(int device, const float* y, const float* dy, float* dx, std::int64_t rows, std::int64_t D,
                             float scale, bool accumulate);

}  // namespace accrue::kernels::cuda
