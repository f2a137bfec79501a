#pragma once
// 2-D pooling, as the CUDA backend's host functions (pool.cpp, over cuDNN), called by kernels/pool.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include "../common/conv_geometry.hpp"
#include "../common/pool.hpp"

namespace accrue::kernels::cuda {

void pool2d_forward(int device, const float* x, float* y, const Window2d& g, PoolMode mode);
void pool2d_backward(int device, const float* x, const float* y, const float* dy, float* dx, const Window2d& g,
                     PoolMode mode, bool accumulate);

}  // namespace accrue::kernels::cuda
