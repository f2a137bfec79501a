#pragma once
// The windows of 2-D max and average pooling, written once: which input wins a max window and
// what an average divides by, as PyTorch computes them.

#include <cmath>
#include <cstdint>

#include "conv_geometry.hpp"

namespace accrue::kernels {

enum class PoolMode : std::uint8_t {
  max,
  average_include_pad,  // divides by the window's size within the padded input (PyTorch's default)
  average_exclude_pad,  // divides by the number of real inputs in the window
};

namespace common {

/// The offset (h * W + w) within one (H, W) plane of the input that wins output (p, q) of a max
/// window: the first largest, or the last NaN (NaN propagates), as PyTorch. -1 when the window
/// holds only padding.
ACCRUE_HD std::int64_t max_pool_winner(const float* plane, const Window2d& g, std::int64_t p, std::int64_t q) {
  std::int64_t winner = -1;
  float best = -INFINITY;
  for (std::int64_t r = 0; r < g.R; ++r) {
    const std::int64_t h = g.in_row(p, r);
    if (h < 0 || h >= g.H) continue;
    for (std::int64_t s = 0; s < g.S; ++s) {
      const std::int64_t w = g.in_col(q, s);
      if (w < 0 || w >= g.W) continue;
      const float v = plane[h * g.W + w];
      if (winner < 0 || v > best || v != v) {
        best = v;
        winner = h * g.W + w;
      }
    }
  }
  return winner;
}

/// What the sum of average window (p, q) is divided by.
ACCRUE_HD float average_pool_divisor(const Window2d& g, std::int64_t p, std::int64_t q, PoolMode mode) {
  const std::int64_t h0 = p * g.stride_h - g.pad_h, w0 = q * g.stride_w - g.pad_w;
  std::int64_t h1 = h0 + g.R, w1 = w0 + g.S;
  if (mode == PoolMode::average_include_pad) {
    h1 = h1 < g.H + g.pad_h ? h1 : g.H + g.pad_h;
    w1 = w1 < g.W + g.pad_w ? w1 : g.W + g.pad_w;
    return static_cast<float>((h1 - h0) * (w1 - w0));
  }
  const std::int64_t hs = h0 > 0 ? h0 : 0, ws = w0 > 0 ? w0 : 0;
  const std::int64_t he = h1 < g.H ? h1 : g.H, we = w1 < g.W ? w1 : g.W;
  const std::int64_t n = (he - hs) * (we - ws);
  return static_cast<float>(n > 0 ? n : 1);
}

}  // namespace common
}  // namespace accrue::kernels
