#pragma once
// 2-D convolution, as the CUDA backend's host functions (conv.cpp, over cuDNN), called by kernels/conv.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include "../common/conv_geometry.hpp"

namespace accrue::kernels::cuda {

void conv2d_forward(int device, const float* x, const float* w, const float* bias, float* y, const Window2d& g);
void conv2d_backward_data(int device, const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate);
void conv2d_backward_filter(int device, const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate);
void conv2d_backward_bias(int device, const float* dy, float* db, const Window2d& g, bool accumulate);

}  // namespace accrue::kernels::cuda
