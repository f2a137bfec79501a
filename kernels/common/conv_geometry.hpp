#pragma once
// The geometry of 2-D convolution and pooling windows over NCHW tensors, written once for both
// backends: output sizes, and where each tap of a window reads its input.

#include <cstdint>

#include "../../framework/core/macros.hpp"

namespace accrue::kernels {

/// Output length of a sliding window along one axis, as PyTorch computes it (floor mode):
/// floor((in + 2 pad - dilation (kernel - 1) - 1) / stride) + 1; <= 0 means the window never fits.
ACCRUE_HD std::int64_t window_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                                          std::int64_t dilation) {
  const std::int64_t span = dilation * (kernel - 1) + 1;
  const std::int64_t room = in + 2 * pad - span;
  return room < 0 ? 0 : room / stride + 1;
}

/// A sliding window over (N, C, H, W): kernel R x S, stride, zero padding and dilation per axis.
/// For convolution C is the input channels and K the output channels, split into `groups`.
struct Window2d {
  std::int64_t N = 0, C = 0, H = 0, W = 0;
  std::int64_t R = 1, S = 1;
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  std::int64_t K = 0, groups = 1;  // convolution only

  ACCRUE_HD std::int64_t P() const { return window_output_size(H, R, stride_h, pad_h, dilation_h); }
  ACCRUE_HD std::int64_t Q() const { return window_output_size(W, S, stride_w, pad_w, dilation_w); }
  /// Input rows of one tap: the input row of output row p and kernel row r (may fall in the padding).
  ACCRUE_HD std::int64_t in_row(std::int64_t p, std::int64_t r) const { return p * stride_h - pad_h + r * dilation_h; }
  ACCRUE_HD std::int64_t in_col(std::int64_t q, std::int64_t s) const { return q * stride_w - pad_w + s * dilation_w; }
  ACCRUE_HD bool inside(std::int64_t h, std::int64_t w) const { return h >= 0 && h < H && w >= 0 && w < W; }

  ACCRUE_HD std::int64_t channels_per_group() const { return C / groups; }
  ACCRUE_HD std::int64_t filters_per_group() const { return K / groups; }
  /// Rows of the im2col matrix of one group: (C / groups) R S.
  ACCRUE_HD std::int64_t patch_size() const { return channels_per_group() * R * S; }
  /// Whether the convolution is a plain matrix product over channels (1x1, stride 1, no padding):
  /// the input itself is its im2col matrix.
  ACCRUE_HD bool is_pointwise() const {
    return R == 1 && S == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
  }
};

enum class ConvPass { forward, backward_data, backward_filter, backward_bias };
/// What a pass of a convolution has to do: nothing (its output has no element), or set its output
/// to beta times itself (each output element sums no term: an empty batch, no channels, an output
/// of no positions; forward then adds the bias), or convolve. Libraries such as cuDNN refuse the
/// first two, so backends check this before calling them.
enum class ConvWork { nothing, no_terms, convolve };
inline ConvWork conv_work(ConvPass pass, const Window2d& g) {
  std::int64_t outputs = 0, terms = 0;
  switch (pass) {
    case ConvPass::forward: outputs = g.N * g.K * g.P() * g.Q(); terms = g.patch_size(); break;
    case ConvPass::backward_data: outputs = g.N * g.C * g.H * g.W; terms = g.filters_per_group() * g.P() * g.Q(); break;
    case ConvPass::backward_filter: outputs = g.K * g.patch_size(); terms = g.N * g.P() * g.Q(); break;
    case ConvPass::backward_bias: outputs = g.K; terms = g.N * g.P() * g.Q(); break;
  }
  if (outputs == 0) return ConvWork::nothing;
  return terms == 0 ? ConvWork::no_terms : ConvWork::convolve;
}

}  // namespace accrue::kernels
