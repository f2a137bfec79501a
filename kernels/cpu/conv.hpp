#pragma once
// The CPU backend's conv functions over raw host memory, called by kernels/conv.cpp;
// defined in kernels/cpu/conv.cpp.

#include <cstdint>

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/common/conv_geometry.hpp"
#include "accrue/kernels/conv.hpp"

namespace accrue::kernels::cpu {

/// `workspace` holds patch_size() * P * Q floats per pool thread (conv2d_workspace_floats).
std::int64_t conv2d_workspace_floats(const Window2d& g);
void conv2d_forward(const float* x, const float* w, const float* bias, float* y, const Window2d& g, float* workspace);
void conv2d_backward_data(const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate,
                          float* workspace);
/// `partials` holds one weight-sized buffer per pool thread beyond the first (conv2d_partial_floats).
std::int64_t conv2d_partial_floats(const Window2d& g);
void conv2d_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                            float* workspace, float* partials);
void conv2d_backward_bias(const float* dy, float* db, const Window2d& g, bool accumulate);
/// The im2col matrix of one sample and group: (patch_size(), P Q), zeros where taps fall in the padding.
void im2col(const float* x, const Window2d& g, float* col);
/// The inverse scatter: dx += col's entries at their taps' input positions.
void col2im_add(const float* col, const Window2d& g, float* dx);

}  // namespace accrue::kernels::cpu
