// Convolution on the CPU: im2col and GEMM. Each pool thread takes whole samples, so every GEMM is
// single-threaded and its im2col matrix (one sample, one group) stays in that core's cache; the
// weight gradient is summed in one buffer per thread and added up at the end.

#include <algorithm>
#include <cstring>

#include "accrue/kernels/cpu/conv.hpp"
#include "accrue/kernels/cpu/openblas.hpp"
#include "accrue/kernels/cpu/parallel.hpp"
#include "accrue/kernels/cpu/gemm.hpp"

namespace accrue::kernels::cpu {
namespace {

// [lo, hi): the output positions whose tap at kernel offset k reads inside [0, in).
struct ValidRange {
  std::int64_t lo, hi;
};

ValidRange valid_outputs(std::int64_t out, std::int64_t in, std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                         std::int64_t k) {
  // input index i(o) = o * stride - pad + k * dilation
  const std::int64_t base = k * dilation - pad;
  auto first_at_least = [&](std::int64_t bound) {  // smallest o with base + o*stride >= bound
    const std::int64_t need = bound - base;
    if (need <= 0) return std::int64_t{0};
    return std::min(out, (need + stride - 1) / stride);
  };
  const std::int64_t lo = first_at_least(0), hi = std::max(lo, first_at_least(in));
  return {lo, hi};
}

// One sample's GEMMs, on the calling pool thread. OpenBLAS's own kernels, not the skinny ones of
// cpu::gemm: for these shapes (64 x 196 x 288 and its transposes) OpenBLAS measured 1.07x to 1.3x
// faster here (bench/conv_shapes and the numbers in the README).
void sample_gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
                 std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  constexpr int row_major = 101, no_trans = 111, trans = 112;
  if (M == 0 || N == 0) return;
  if (K == 0) return gemm(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);  // scales C by beta
  openblas().sgemm(row_major, trans_a ? trans : no_trans, trans_b ? trans : no_trans, static_cast<int>(M),
                   static_cast<int>(N), static_cast<int>(K), 1.0f, A, static_cast<int>(lda), B, static_cast<int>(ldb),
                   beta, C, static_cast<int>(ldc));
}

int tasks_for(std::int64_t samples) { return static_cast<int>(std::min<std::int64_t>(num_threads(), samples)); }

// Sample ranges of the tasks.
std::int64_t sample_begin(std::int64_t N, int tasks, int t) { return N * t / tasks; }

}  // namespace

void im2col(const float* x, const Window2d& g, float* col) {
  const std::int64_t P = g.P(), Q = g.Q(), Cg = g.channels_per_group();
  for (std::int64_t c = 0; c < Cg; ++c) {
    const float* xc = x + c * g.H * g.W;
    for (std::int64_t r = 0; r < g.R; ++r) {
      const ValidRange rows = valid_outputs(P, g.H, g.stride_h, g.pad_h, g.dilation_h, r);
      for (std::int64_t s = 0; s < g.S; ++s) {
        const ValidRange cols = valid_outputs(Q, g.W, g.stride_w, g.pad_w, g.dilation_w, s);
        float* dst = col + ((c * g.R + r) * g.S + s) * P * Q;
        std::fill(dst, dst + rows.lo * Q, 0.0f);
        for (std::int64_t p = rows.lo; p < rows.hi; ++p) {
          float* d = dst + p * Q;
          const float* src = xc + g.in_row(p, r) * g.W;
          std::fill(d, d + cols.lo, 0.0f);
          if (g.stride_w == 1) {
            std::memcpy(d + cols.lo, src + g.in_col(cols.lo, s), static_cast<std::size_t>(cols.hi - cols.lo) * sizeof(float));
          } else {
            for (std::int64_t q = cols.lo; q < cols.hi; ++q) d[q] = src[g.in_col(q, s)];
          }
          std::fill(d + cols.hi, d + Q, 0.0f);
        }
        std::fill(dst + rows.hi * Q, dst + P * Q, 0.0f);
      }
    }
  }
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

std::int64_t conv2d_workspace_floats(const Window2d& g) {
  return g.is_pointwise() ? 0 : tasks_for(g.N) * g.patch_size() * g.P() * g.Q();
}

std::int64_t conv2d_partial_floats(const Window2d& g) {
  return std::max(0, tasks_for(g.N) - 1) * g.K * g.patch_size();
}

void conv2d_forward(const float* x, const float* w, const float* bias, float* y, const Window2d& g, float* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size();
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    float* col = workspace + t * patch * PQ;
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

void conv2d_backward_data(const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate,
                          float* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size(), HW = g.H * g.W;
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    float* col = workspace + t * patch * PQ;
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
        if (!accumulate) std::fill(dxg, dxg + Cg * HW, 0.0f);
        col2im_add(col, g, dxg);
      }
    }
  });
}

void conv2d_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                            float* workspace, float* partials) {
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size(), wsize = g.K * patch;
  const int tasks = tasks_for(g.N);
  if (g.N == 0) {
    if (!accumulate) std::fill(dw, dw + wsize, 0.0f);
    return;
  }
  parallel_tasks(tasks, [&](int t) {
    float* col = workspace + t * patch * PQ;
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
  for (int t = 1; t < tasks; ++t) {
    const float* part = partials + (t - 1) * wsize;
    for (std::int64_t i = 0; i < wsize; ++i) dw[i] += part[i];
  }
}

void conv2d_backward_bias(const float* dy, float* db, const Window2d& g, bool accumulate) {
  const std::int64_t PQ = g.P() * g.Q();
  for (std::int64_t k = 0; k < g.K; ++k) {
    double s = 0.0;
    for (std::int64_t n = 0; n < g.N; ++n) {
      const float* p = dy + (n * g.K + k) * PQ;
      float part = 0.0f;
      for (std::int64_t i = 0; i < PQ; ++i) part += p[i];
      s += part;
    }
    db[k] = accumulate ? db[k] + static_cast<float>(s) : static_cast<float>(s);
  }
}

}  // namespace accrue::kernels::cpu
