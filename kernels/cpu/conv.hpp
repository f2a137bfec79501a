#pragma once
// The CPU backend's conv functions over raw host memory, called by kernels/conv.cpp;
// defined in kernels/cpu/conv.cpp.

#include <cstddef>
#include <cstdint>

#include "../../framework/core/tensor.hpp"
#include "../common/conv_geometry.hpp"
#include "conv/form.hpp"
#include "gemm/bf16.hpp"

namespace accrue::kernels::cpu {

/// Bytes of the temporaries of each pass (the `workspace` of the calls below) and, beside them, the
/// weight's packs the bfloat16 forward and backward_data make, and of those the ones kept through a
/// window while parameter packs are open (made once then, and counted as parameters too).
struct ConvWorkspaceBytes {
  std::size_t forward = 0, backward_data = 0, backward_filter = 0;
  std::size_t forward_packs = 0, backward_data_packs = 0;
  std::size_t kept_forward = 0, kept_backward_data = 0;
};
ConvWorkspaceBytes conv2d_workspace_bytes(const Window2d& g);
bool implicit_gemm_available();
void pin_conv2d_form(Conv2dForm form);
void conv2d_forward(const float* x, const float* w, const float* bias, float* y, const Window2d& g,
                    std::byte* workspace);
void conv2d_backward_data(const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate,
                          std::byte* workspace);
void conv2d_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                            std::byte* workspace);
void conv2d_backward_bias(const float* dy, float* db, const Window2d& g, bool accumulate);
/// The bfloat16 forms (autocast on a processor with a bfloat16 kernel): operands rounded to
/// bfloat16, products accumulated in float32. x and dx float32 or bfloat16, y and dy bfloat16, the
/// weight float32 (its packs kept while parameter packs are open, when `w_param` is given), dw and
/// db float32.
ConvWorkspaceBytes conv2d_bf16_workspace_bytes(const Window2d& g, DType dx_type);
void conv2d_forward_bf16(const void* x, DType x_type, const float* w, const ParameterOperand* w_param,
                         const float* bias, std::uint16_t* y, const Window2d& g, std::byte* workspace);
void conv2d_backward_data_bf16(const std::uint16_t* dy, const float* w, const ParameterOperand* w_param, void* dx,
                               DType dx_type, const Window2d& g, bool accumulate, std::byte* workspace);
void conv2d_backward_filter_bf16(const std::uint16_t* dy, const void* x, DType x_type, float* dw, const Window2d& g,
                                 bool accumulate, std::byte* workspace);
void conv2d_backward_bias_bf16(const std::uint16_t* dy, float* db, const Window2d& g, bool accumulate);

}  // namespace accrue::kernels::cpu
