// Pooling on the CPU: one (H, W) plane per step, planes split across the pool.

#include <algorithm>
#include <cmath>

#include "accrue/kernels/cpu/parallel.hpp"
#include "accrue/kernels/pool.hpp"

namespace accrue::kernels::cpu {
namespace {

// Planes per task below which splitting does not pay (a 28x28 plane is about a microsecond).
constexpr std::int64_t plane_grain = 16;

}  // namespace

void pool2d_forward(const float* x, float* y, const Window2d& g, PoolMode mode) {
  const std::int64_t P = g.P(), Q = g.Q(), HW = g.H * g.W;
  parallel_for(g.N * g.C, plane_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t plane = begin; plane < end; ++plane) {
      const float* xp = x + plane * HW;
      float* yp = y + plane * P * Q;
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          if (mode == PoolMode::max) {
            const std::int64_t at = common::max_pool_winner(xp, g, p, q);
            yp[p * Q + q] = at < 0 ? -INFINITY : xp[at];
            continue;
          }
          float sum = 0.0f;
          for (std::int64_t r = 0; r < g.R; ++r) {
            const std::int64_t h = g.in_row(p, r);
            if (h < 0 || h >= g.H) continue;
            for (std::int64_t s = 0; s < g.S; ++s) {
              const std::int64_t w = g.in_col(q, s);
              if (w >= 0 && w < g.W) sum += xp[h * g.W + w];
            }
          }
          yp[p * Q + q] = sum / common::average_pool_divisor(g, p, q, mode);
        }
    }
  });
}

void pool2d_backward(const float* x, const float* dy, float* dx, const Window2d& g, PoolMode mode, bool accumulate) {
  const std::int64_t P = g.P(), Q = g.Q(), HW = g.H * g.W;
  parallel_for(g.N * g.C, plane_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t plane = begin; plane < end; ++plane) {
      const float* xp = x + plane * HW;
      const float* dyp = dy + plane * P * Q;
      float* dxp = dx + plane * HW;
      if (!accumulate) std::fill(dxp, dxp + HW, 0.0f);
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          const float d = dyp[p * Q + q];
          if (mode == PoolMode::max) {
            const std::int64_t at = common::max_pool_winner(xp, g, p, q);
            if (at >= 0) dxp[at] += d;
            continue;
          }
          const float share = d / common::average_pool_divisor(g, p, q, mode);
          for (std::int64_t r = 0; r < g.R; ++r) {
            const std::int64_t h = g.in_row(p, r);
            if (h < 0 || h >= g.H) continue;
            for (std::int64_t s = 0; s < g.S; ++s) {
              const std::int64_t w = g.in_col(q, s);
              if (w >= 0 && w < g.W) dxp[h * g.W + w] += share;
            }
          }
        }
    }
  });
}

}  // namespace accrue::kernels::cpu
