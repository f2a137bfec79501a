// The im2col form (float32): each sample's patches written out as a matrix and multiplied with
// OpenBLAS's sgemm; also im2col and col2im themselves.

#include "forms.hpp"

namespace accrue::kernels::cpu {
using namespace conv_detail;

void im2col(const float* x, const Window2d& g, float* col) {
  const std::int64_t PQ = g.P() * g.Q();
  for (std::int64_t k = 0; k < g.patch_size(); ++k) im2col_row(x, g, k, col + k * PQ);
}

void col2im_add(const float* col, const Window2d& g, float* dx) {
  const std::int64_t P = g.P(), Q = g.Q(), Cg = g.channels_per_group();
  for (std::int64_t c = 0; c < Cg; ++c) {
    float* dxc = dx + c * g.H * g.W;
    for (std::int64_t r = 0; r < g.R; ++r) {
      const ValidRange rows = valid_outputs(P, g.H, g.stride_h, g.pad_h, g.dilation_h, r);
      for (std::int64_t s = 0; s < g.S; ++s) {
        const ValidRange cols = valid_outputs(Q, g.W, g.stride_w, g.pad_w, g.dilation_w, s);
        const float* src = col + ((c * g.R + r) * g.S + s) * P * Q;
        for (std::int64_t p = rows.lo; p < rows.hi; ++p) {
          const float* sp = src + p * Q;
          float* d = dxc + g.in_row(p, r) * g.W;
          if (g.stride_w == 1) {
            const std::int64_t offset = g.in_col(0, s);
            for (std::int64_t q = cols.lo; q < cols.hi; ++q) d[q + offset] += sp[q];
          } else {
            for (std::int64_t q = cols.lo; q < cols.hi; ++q) d[g.in_col(q, s)] += sp[q];
          }
        }
      }
    }
  }
}

namespace conv_detail {

// ---- float32 elsewhere: im2col and OpenBLAS -----------------------------------------------------
// Also the pointwise (1x1) convolutions, whose input already is their im2col matrix, and the input
// gradient of strided or dilated ones.

// One sample's im2col matrix per task (none for a pointwise convolution).
std::size_t col_bytes(const Window2d& g) {
  return g.is_pointwise() ? 0 : Carve::bytes<float>(g.patch_size() * g.P() * g.Q());
}

void im2col_forward(const float* x, const float* w, const float* bias, float* y, const Window2d& g,
                    std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size();
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    auto* col = reinterpret_cast<float*>(workspace + t * col_bytes(g));
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        const float* xg = x + (n * g.C + grp * Cg) * g.H * g.W;
        float* yg = y + (n * g.K + grp * Kg) * PQ;
        if (bias != nullptr)
          for (std::int64_t k = 0; k < Kg; ++k) std::fill(yg + k * PQ, yg + (k + 1) * PQ, bias[grp * Kg + k]);
        const float* B = xg;
        if (!g.is_pointwise()) {
          im2col(xg, g, col);
          B = col;
        }
        sample_gemm(false, false, Kg, PQ, patch, w + grp * Kg * patch, patch, B, PQ, bias != nullptr ? 1.0f : 0.0f, yg,
                    PQ);
      }
    }
  });
}

// Accumulating, a sample's gradient is summed apart and added to dx once, as the implicit form
// does: scattered straight into dx, each window's share would round against the old gradient, and
// two equal backward passes would not give twice one.
std::size_t backward_data_col_bytes(const Window2d& g) {
  return g.is_pointwise() ? 0 : col_bytes(g) + Carve::bytes<float>(g.channels_per_group() * g.H * g.W);
}

void im2col_backward_data(const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate,
                          std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size(), HW = g.H * g.W;
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * backward_data_col_bytes(g)};
    float* col = g.is_pointwise() ? nullptr : carve.take<float>(patch * PQ);
    float* sum = g.is_pointwise() ? nullptr : carve.take<float>(Cg * HW);
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        const float* dyg = dy + (n * g.K + grp * Kg) * PQ;
        float* dxg = dx + (n * g.C + grp * Cg) * HW;
        const float* wg = w + grp * Kg * patch;
        if (g.is_pointwise()) {  // dx (Cg, HW) = Wg^T dy
          sample_gemm(true, false, Cg, PQ, Kg, wg, patch, dyg, PQ, accumulate ? 1.0f : 0.0f, dxg, PQ);
          continue;
        }
        sample_gemm(true, false, patch, PQ, Kg, wg, patch, dyg, PQ, 0.0f, col, PQ);
        float* into = accumulate ? sum : dxg;
        std::fill(into, into + Cg * HW, 0.0f);
        col2im_add(col, g, into);
        if (accumulate)
          for (std::int64_t i = 0; i < Cg * HW; ++i) dxg[i] += sum[i];
      }
    }
  });
}

void im2col_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                            std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size(), wsize = g.K * patch;
  const int tasks = tasks_for(g.N);
  if (g.N == 0) {
    if (!accumulate) std::fill(dw, dw + wsize, 0.0f);
    return;
  }
  auto* partials = reinterpret_cast<float*>(workspace + tasks * col_bytes(g));
  parallel_tasks(tasks, [&](int t) {
    auto* col = reinterpret_cast<float*>(workspace + t * col_bytes(g));
    // Task 0 sums into dw itself (adding to what it holds when accumulating), the others into their own buffer.
    float* out = t == 0 ? dw : partials + (t - 1) * wsize;
    bool first = t != 0 || !accumulate;
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        const float* dyg = dy + (n * g.K + grp * Kg) * PQ;
        const float* xg = x + (n * g.C + grp * Cg) * g.H * g.W;
        const float* B = xg;
        if (!g.is_pointwise()) {
          im2col(xg, g, col);
          B = col;
        }
        // dW_g (Kg, patch) += dy_g (Kg, PQ) col^T (PQ, patch)
        sample_gemm(false, true, Kg, patch, PQ, dyg, PQ, B, PQ, first ? 0.0f : 1.0f, out + grp * Kg * patch, patch);
      }
      first = false;
    }
  });
  add_partials(partials, dw, g);
}


}  // namespace conv_detail

}  // namespace accrue::kernels::cpu
