// Convolution on the CPU. Each pool thread takes whole samples, so every product is single-threaded
// and one sample's operands stay in that core's cache (images of few positions, a ResNet's last
// stage, go a block of samples to a product, so that the weight is streamed once per block); the
// weight gradient is summed in one buffer per thread and added up at the end. Two forms in each
// type (bench/conv_shapes times them):
// - the implicit GEMM (AVX-512, or AVX2 with FMA in float32): products read the zero-padded image
//   where it lies, so the im2col matrix is never written; in bfloat16 (AVX-512 BF16) over pairs of
//   channels or positions;
// - im2col: with OpenBLAS's sgemm in float32, and written straight into the bfloat16 kernels' pair
//   layout for AMX's tiles or vdpbf16ps in bfloat16. It serves processors without the first form,
//   pointwise convolutions and passes with fewer than 16 output channels per group.
// A third in float32, Winograd F(2x2, 3x3) on the implicit GEMM's tiles, runs every pass of 3x3
// convolutions of stride 1 where it was measured faster (AVX2).
// With stride 1 and dilation 1 the input's gradient runs as a convolution (of dy, with the weight
// flipped), elsewhere as a product and a col2im scatter.

// The forms live in kernels/cpu/conv/: im2col.cpp, implicit_gemm.cpp, winograd.cpp, bf16.cpp, with
// what they share in parts.hpp and gathered_tiles.hpp. Here: the choice of form for each pass.

#include <atomic>

#include "conv.hpp"
#include "conv/forms.hpp"

namespace accrue::kernels::cpu {
using namespace conv_detail;

namespace conv_detail {


std::atomic<Conv2dForm> pinned_form{Conv2dForm::automatic};

// Whether an implicit GEMM the processor can run (`available`) runs a pass whose output has
// `channels` per group, which fill that many lanes of its vectors of 16: unless a form is pinned,
// where it is `preferred` to the other form, for 16 or more channels. Pointwise convolutions need no
// im2col, so they stay a plain product. Pinned Winograd, passes it cannot run choose as here.
bool runs_implicit(const Window2d& g, std::int64_t channels, bool available, bool preferred) {
  if (!available) return false;
  switch (pinned_form.load()) {
    case Conv2dForm::im2col: return false;
    case Conv2dForm::implicit_gemm: return true;
    case Conv2dForm::automatic:
    case Conv2dForm::winograd: break;
  }
  return preferred && !g.is_pointwise() && channels >= 16;
}
// Whether a pass (forward, the weight's gradient, or the input's gradient run as a forward pass)
// takes the Winograd form: where it fits, unless another form is pinned, with AVX2, where
// bench/conv_shapes measured it ahead of the implicit GEMM (the CNN's second convolution at batch
// 64 on a Zen 3: forward 1.75-1.76 against 2.70-2.74 ms, with the backward pass 5.48-5.60 against
// 8.23-8.39 ms). AVX-512 keeps the implicit GEMM, the form measured there, until Winograd is
// measured on such a processor.
bool runs_winograd(const Window2d& g) {
  if (!implicit_gemm_runs() || !winograd_fits(g)) return false;
  switch (pinned_form.load()) {
    case Conv2dForm::im2col:
    case Conv2dForm::implicit_gemm: return false;
    case Conv2dForm::winograd: return true;
    case Conv2dForm::automatic: break;
  }
  return implicit_kernel() == ImplicitKernel::avx2;
}
bool input_gradient_runs_winograd(const Window2d& g) {
  return input_gradient_is_a_convolution(g) && runs_winograd(input_gradient_window(g));
}
// In float32 with AVX-512 OpenBLAS stays ahead on products of depth under 16 (a 3x3 kernel over
// one channel: bench/conv_shapes' first convolution), where the implicit GEMM's tiles load and store
// as much as they multiply. With AVX2 the two forms' forward passes there take the same time and
// the implicit weight gradient is faster (0.90 against 1.13 ms for forward and backward at batch 64
// on a Zen 3), so AVX2 takes the implicit form at any depth.
bool forward_runs_implicit(const Window2d& g) {
  return runs_implicit(g, g.filters_per_group(), implicit_gemm_runs(),
                       g.patch_size() >= 16 || implicit_kernel() == ImplicitKernel::avx2);
}
bool input_gradient_runs_implicit(const Window2d& g) {
  return input_gradient_is_a_convolution(g) &&
         runs_implicit(g, g.channels_per_group(), implicit_gemm_runs(), g.filters_per_group() * g.R * g.S >= 16);
}

}  // namespace conv_detail

bool implicit_gemm_available() { return implicit_gemm_runs(); }

void pin_conv2d_form(Conv2dForm form) {
  if ((form == Conv2dForm::implicit_gemm || form == Conv2dForm::winograd) && !implicit_gemm_runs())
    throw DeviceError(
        "pin_conv2d_form: the implicit GEMM and Winograd convolutions need AVX-512 or AVX2 with FMA, which this "
        "processor lacks");
  pinned_form = form;
}

ConvWorkspaceBytes conv2d_workspace_bytes(const Window2d& g) {
  const auto all = [&](std::size_t per_task) { return static_cast<std::size_t>(tasks_for(g.N)) * per_task; };
  const std::size_t im2col = all(col_bytes(g));
  const Window2d t = input_gradient_window(g);
  const std::size_t forward = runs_winograd(g)          ? winograd_weight_bytes(g) + all(winograd_task_bytes(g))
                              : forward_runs_implicit(g) ? packed_weight_bytes(g) + all(ImplicitTask::bytes(g))
                                                         : im2col;
  const std::size_t backward_data =
      input_gradient_runs_winograd(g)   ? flipped_weight_bytes(g) + winograd_weight_bytes(t) + all(winograd_task_bytes(t))
      : input_gradient_runs_implicit(g) ? flipped_weight_bytes(g) + packed_weight_bytes(t) + all(ImplicitTask::bytes(t))
                                        : all(backward_data_col_bytes(g));
  const std::size_t backward_filter = runs_winograd(g)          ? all(winograd_filter_task_bytes(g))
                                      : forward_runs_implicit(g) ? all(implicit_filter_task_bytes(g))
                                                                 : im2col + partials_bytes(g);
  return {.forward = forward, .backward_data = backward_data, .backward_filter = backward_filter};
}

void conv2d_forward(const float* x, const float* w, const float* bias, float* y, const Window2d& g,
                    std::byte* workspace) {
  if (runs_winograd(g)) {
    auto* u = reinterpret_cast<float*>(workspace);
    winograd_weight(w, g, u);
    return winograd_forward(x, u, bias, y, false, g, workspace + winograd_weight_bytes(g));
  }
  if (!forward_runs_implicit(g)) return im2col_forward(x, w, bias, y, g, workspace);
  auto* packed = reinterpret_cast<float*>(workspace);
  pack_weight(w, g, packed);
  implicit_forward(x, packed, bias, y, false, g, workspace + packed_weight_bytes(g));
}

void conv2d_backward_data(const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate,
                          std::byte* workspace) {
  const bool winograd = input_gradient_runs_winograd(g);
  if (!winograd && !input_gradient_runs_implicit(g)) return im2col_backward_data(dy, w, dx, g, accumulate, workspace);
  const Window2d t = input_gradient_window(g);
  auto* flipped = reinterpret_cast<float*>(workspace);
  flip_weight(w, g, flipped);
  std::byte* rest = workspace + flipped_weight_bytes(g);
  auto* packed = reinterpret_cast<float*>(rest);
  if (winograd) {
    winograd_weight(flipped, t, packed);
    return winograd_forward(dy, packed, nullptr, dx, accumulate, t, rest + winograd_weight_bytes(t));
  }
  pack_weight(flipped, t, packed);
  implicit_forward(dy, packed, nullptr, dx, accumulate, t, rest + packed_weight_bytes(t));
}

void conv2d_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                            std::byte* workspace) {
  if (runs_winograd(g)) return winograd_backward_filter(dy, x, dw, g, accumulate, workspace);
  if (!forward_runs_implicit(g)) return im2col_backward_filter(dy, x, dw, g, accumulate, workspace);
  implicit_backward_filter(dy, x, dw, g, accumulate, workspace);
}

void conv2d_backward_bias(const float* dy, float* db, const Window2d& g, bool accumulate) {
  backward_bias(dy, db, g, accumulate);
}
}  // namespace accrue::kernels::cpu
