#pragma once
// The CPU convolution's forms, one file each under kernels/cpu/conv/, as the choice among them
// (kernels/cpu/conv.cpp) and the bfloat16 forms call them. Each is described where it is defined.

#include <atomic>

#include "form.hpp"
#include "gathered_tiles.hpp"

namespace accrue::kernels::cpu::conv_detail {

// ---- im2col.cpp

std::size_t col_bytes(const Window2d& g);
void im2col_forward(const float* x, const float* w, const float* bias, float* y, const Window2d& g,
                    std::byte* workspace);
std::size_t backward_data_col_bytes(const Window2d& g);
void im2col_backward_data(const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate,
                          std::byte* workspace);
void im2col_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                            std::byte* workspace);

// ---- implicit_gemm.cpp

void implicit_forward(const float* x, const float* packed, const float* bias, float* y, bool accumulate,
                      const Window2d& g, std::byte* workspace);
std::size_t implicit_filter_task_bytes(const Window2d& g);
void add_transposed_sums(const std::vector<float*>& sums, float* dw, const Window2d& g, bool accumulate);
void implicit_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                              std::byte* workspace);

// ---- winograd.cpp

bool winograd_fits(const Window2d& g);
std::size_t winograd_weight_bytes(const Window2d& g);
void winograd_weight(const float* weight, const Window2d& g, float* u);
void winograd_forward(const float* x, const float* u, const float* bias, float* y, bool accumulate, const Window2d& g,
                      std::byte* workspace);
std::size_t winograd_task_bytes(const Window2d& g);
std::size_t winograd_filter_task_bytes(const Window2d& g);
void add_winograd_filter_sums(const std::vector<float*>& sums, float* dw, const Window2d& g, bool accumulate);
void winograd_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                              std::byte* workspace);

// ---- kernels/cpu/conv.cpp: the choice of form

extern std::atomic<Conv2dForm> pinned_form;
bool runs_implicit(const Window2d& g, std::int64_t channels, bool available, bool preferred);
bool runs_winograd(const Window2d& g);
bool input_gradient_runs_winograd(const Window2d& g);
bool forward_runs_implicit(const Window2d& g);
bool input_gradient_runs_implicit(const Window2d& g);

}  // namespace accrue::kernels::cpu::conv_detail
