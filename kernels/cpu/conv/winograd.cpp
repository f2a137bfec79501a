// The Winograd F(2x2, 3x3) form (float32) of 3x3 convolutions of stride 1.

#include "forms.hpp"

namespace accrue::kernels::cpu {
using namespace conv_detail;

namespace conv_detail {

// ---- float32 Winograd F(2x2, 3x3) ---------------------------------------------------------------
// A 3x3 convolution of stride 1 computes each 2x2 block of outputs from a 4x4 block of its padded
// input with 16 multiplications per channel and filter instead of 36 (Lavin and Gray's minimal
// filtering): the input block d and the filter g are transformed, V = B^T d B and U = G g G^T, and
// for each of the 16 elements the products summed over channels are a product of a
// (tiles x channels) and a (channels x filters) matrix, which the implicit GEMM's tiles run; the
// result M comes back as Y = A^T M A. G halves, B and A add and subtract, so the transforms round
// little (tests/ops/test_conv.cpp holds every form to 1e-5 of a double-precision sum).
// The input is laid out channels last, so that every transform runs along channels (or filters) in
// whole vectors.

// Tiles and padded sizes of one sample's group. Tiles are transformed and multiplied a band of
// `band_rows` rows of tiles at a time, whose V and M (16 x tiles x (Cp + Kp) floats) fit in about
// 384 KB, so that they stay in L2 between the transforms and the products whatever the image size
// (the CNN's 14 x 14 images take one band).
struct WinogradShape {
  std::int64_t tiles_h, tiles_w, tiles, Hw, Ww, Cg, Cp, Kg, Kp, band_rows, band_tiles;
  explicit WinogradShape(const Window2d& g)
      : tiles_h((g.P() + 1) / 2),
        tiles_w((g.Q() + 1) / 2),
        tiles(tiles_h * tiles_w),
        // Rows and columns the last tiles read, beyond the image's padding when P or Q is odd.
        Hw(2 * tiles_h + 2),
        Ww(2 * tiles_w + 2),
        Cg(g.channels_per_group()),
        Cp(lanes16(Cg)),
        Kg(g.filters_per_group()),
        Kp(lanes16(Kg)),
        band_rows(std::clamp<std::int64_t>((384 << 10) / (16 * std::max<std::int64_t>(tiles_w, 1) * (Cp + Kp) * 4), 1,
                                           std::max<std::int64_t>(tiles_h, 1))),
        band_tiles(band_rows * tiles_w) {}
};

// 3x3, stride 1, no dilation, and products at least 16 deep into at least 16 filters (shallower,
// the tiles load and store as much as they multiply).
bool winograd_fits(const Window2d& g) {
  return g.R == 3 && g.S == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
         g.channels_per_group() >= 16 && g.filters_per_group() >= 16;
}

// U = G g G^T of every filter and channel of each group: groups x 16 x (Cg x Kp), zeros beside.
std::size_t winograd_weight_bytes(const Window2d& g) {
  const WinogradShape ws{g};
  return Carve::bytes<float>(g.groups * 16 * ws.Cg * ws.Kp);
}
void winograd_weight(const float* weight, const Window2d& g, float* u) {
  const WinogradShape ws{g};
  std::fill(u, u + g.groups * 16 * ws.Cg * ws.Kp, 0.0f);
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t k = 0; k < ws.Kg; ++k)
      for (std::int64_t c = 0; c < ws.Cg; ++c) {
        const float* f = weight + ((grp * ws.Kg + k) * ws.Cg + c) * 9;
        float t[4][3];  // G g
        for (int j = 0; j < 3; ++j) {
          t[0][j] = f[j];
          t[1][j] = 0.5f * (f[j] + f[3 + j] + f[6 + j]);
          t[2][j] = 0.5f * (f[j] - f[3 + j] + f[6 + j]);
          t[3][j] = f[6 + j];
        }
        for (int i = 0; i < 4; ++i) {
          const float e[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]), 0.5f * (t[i][0] - t[i][1] + t[i][2]),
                              t[i][2]};
          for (int j = 0; j < 4; ++j) u[((grp * 16 + i * 4 + j) * ws.Cg + c) * ws.Kp + k] = e[j];
        }
      }
}

// What each task carves: the padded image channels last (cleared once, so that its padding stays
// zero), a band's V (16 x band_tiles x Cp) and M (16 x band_tiles x Kp), Y^T (whole tiles'
// positions x Kp) and the GEMMs' offsets.
struct WinogradTask {
  float* xp;
  float* v;
  float* m;
  float* yt;
  std::int32_t* tile_offsets;
  std::int32_t* channel_offsets;

  static std::size_t bytes(const Window2d& g) {
    const WinogradShape ws{g};
    return Carve::bytes<float>(ws.Hw * ws.Ww * ws.Cp) + Carve::bytes<float>(16 * ws.band_tiles * ws.Cp) +
           Carve::bytes<float>(16 * ws.band_tiles * ws.Kp) + Carve::bytes<float>(4 * ws.tiles * ws.Kp) +
           Carve::bytes<std::int32_t>(ws.band_tiles) + Carve::bytes<std::int32_t>(ws.Cg);
  }
  WinogradTask(Carve& carve, const WinogradShape& ws)
      : xp(carve.take<float>(ws.Hw * ws.Ww * ws.Cp)),
        v(carve.take<float>(16 * ws.band_tiles * ws.Cp)),
        m(carve.take<float>(16 * ws.band_tiles * ws.Kp)),
        yt(carve.take<float>(4 * ws.tiles * ws.Kp)),
        tile_offsets(carve.take<std::int32_t>(ws.band_tiles)),
        channel_offsets(carve.take<std::int32_t>(ws.Cg)) {
    std::fill(xp, xp + ws.Hw * ws.Ww * ws.Cp, 0.0f);
    for (std::int64_t t = 0; t < ws.band_tiles; ++t) tile_offsets[t] = static_cast<std::int32_t>(t * ws.Cp);
    for (std::int64_t c = 0; c < ws.Cg; ++c) channel_offsets[c] = static_cast<std::int32_t>(c);
  }
  // Group `grp` of sample n into xp, channels last, inside the padding.
  void fill(const float* x, const Window2d& g, const WinogradShape& ws, std::int64_t n, std::int64_t grp) const {
    const std::int64_t HW = g.H * g.W;
    const float* xg = x + (n * g.C + grp * ws.Cg) * HW;
    for (std::int64_t h = 0; h < g.H; ++h)
      transpose_floats(xg + h * g.W, HW, ws.Cg, g.W, xp + ((h + g.pad_h) * ws.Ww + g.pad_w) * ws.Cp, ws.Cp, nullptr,
                       false);
  }
};

// V = B^T d B for every tile of rows [ti0, ti1) and channel, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0;
// 0 1 0 -1]. (ivdep: the 32 pointers are more than GCC checks for overlap before it vectorizes.)
void winograd_input(const float* xp, const WinogradShape& ws, std::int64_t ti0, std::int64_t ti1, float* v) {
  const std::int64_t plane = ws.band_tiles * ws.Cp;
  for (std::int64_t ti = ti0; ti < ti1; ++ti)
    for (std::int64_t tj = 0; tj < ws.tiles_w; ++tj) {
      const float* d[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) d[i][j] = xp + ((2 * ti + i) * ws.Ww + 2 * tj + j) * ws.Cp;
      float* out[16];
      for (int e = 0; e < 16; ++e) out[e] = v + e * plane + ((ti - ti0) * ws.tiles_w + tj) * ws.Cp;
#pragma GCC ivdep
      for (std::int64_t c = 0; c < ws.Cp; ++c) {
        float t[4][4];  // B^T d
        for (int j = 0; j < 4; ++j) {
          t[0][j] = d[0][j][c] - d[2][j][c];
          t[1][j] = d[1][j][c] + d[2][j][c];
          t[2][j] = d[2][j][c] - d[1][j][c];
          t[3][j] = d[1][j][c] - d[3][j][c];
        }
        for (int i = 0; i < 4; ++i) {
          out[4 * i][c] = t[i][0] - t[i][2];
          out[4 * i + 1][c] = t[i][1] + t[i][2];
          out[4 * i + 2][c] = t[i][2] - t[i][1];
          out[4 * i + 3][c] = t[i][1] - t[i][3];
        }
      }
    }
}

// Y = A^T M A for every tile of rows [ti0, ti1) and filter, A^T = [1 1 1 0; 0 1 -1 -1], into Y^T,
// whole tiles: positions (2 tiles_h) x (2 tiles_w), Kp apart.
void winograd_output(const float* m, const WinogradShape& ws, std::int64_t ti0, std::int64_t ti1, float* yt) {
  const std::int64_t plane = ws.band_tiles * ws.Kp, Qw = 2 * ws.tiles_w;
  for (std::int64_t ti = ti0; ti < ti1; ++ti)
    for (std::int64_t tj = 0; tj < ws.tiles_w; ++tj) {
      const float* in[16];
      for (int e = 0; e < 16; ++e) in[e] = m + e * plane + ((ti - ti0) * ws.tiles_w + tj) * ws.Kp;
      float* y00 = yt + (2 * ti * Qw + 2 * tj) * ws.Kp;
      float* y01 = y00 + ws.Kp;
      float* y10 = y00 + Qw * ws.Kp;
      float* y11 = y10 + ws.Kp;
#pragma GCC ivdep
      for (std::int64_t k = 0; k < ws.Kp; ++k) {
        float s[2][4];  // A^T M
        for (int j = 0; j < 4; ++j) {
          s[0][j] = in[j][k] + in[4 + j][k] + in[8 + j][k];
          s[1][j] = in[4 + j][k] - in[8 + j][k] - in[12 + j][k];
        }
        y00[k] = s[0][0] + s[0][1] + s[0][2];
        y01[k] = s[0][1] - s[0][2] - s[0][3];
        y10[k] = s[1][0] + s[1][1] + s[1][2];
        y11[k] = s[1][1] - s[1][2] - s[1][3];
      }
    }
}

// y (+)= conv(x, the transformed weight u) + bias, one sample's group at a time.
void winograd_forward(const float* x, const float* u, const float* bias, float* y, bool accumulate, const Window2d& g,
                      std::byte* workspace) {
  const WinogradShape ws{g};
  const std::int64_t PQ = g.P() * g.Q();
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * WinogradTask::bytes(g)};
    const WinogradTask task{carve, ws};
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        task.fill(x, g, ws, n, grp);
        for (std::int64_t ti0 = 0; ti0 < ws.tiles_h; ti0 += ws.band_rows) {
          const std::int64_t ti1 = std::min(ws.tiles_h, ti0 + ws.band_rows), count = (ti1 - ti0) * ws.tiles_w;
          winograd_input(task.xp, ws, ti0, ti1, task.v);
          for (std::int64_t e = 0; e < 16; ++e)
            gathered_gemm(task.v + e * ws.band_tiles * ws.Cp, task.tile_offsets, count, task.channel_offsets, ws.Cg,
                          u + (grp * 16 + e) * ws.Cg * ws.Kp, ws.Kp, task.m + e * ws.band_tiles * ws.Kp, false);
          winograd_output(task.m, ws, ti0, ti1, task.yt);
        }
        // Y^T's rows are whole tiles' positions: with Q even, those of the first P rows are y's.
        float* yg = y + (n * g.K + grp * ws.Kg) * PQ;
        const float* bg = bias != nullptr ? bias + grp * ws.Kg : nullptr;
        if (g.Q() % 2 == 0) transpose_floats(task.yt, ws.Kp, PQ, ws.Kg, yg, PQ, bg, accumulate);
        else
          for (std::int64_t p = 0; p < g.P(); ++p)
            transpose_floats(task.yt + p * 2 * ws.tiles_w * ws.Kp, ws.Kp, g.Q(), ws.Kg, yg + p * g.Q(), PQ, bg,
                             accumulate);
      }
  });
}

// The weight's gradient the same way: with dM = A dY A^T the gradient of M = U (.) V, each
// element's dU (channels x filters) sums V^T dM over the tiles of every sample, a product as deep as
// the tiles, and dW = G^T dU G. The output's gradient is transposed once per sample into Y^T's
// whole-tile layout, zeros past an odd P or Q.

// One task's workspace in forward and the input's gradient.
std::size_t winograd_task_bytes(const Window2d& g) { return WinogradTask::bytes(g); }

// What each task carves beyond WinogradTask's (whose M holds dM, and whose offsets serve with rows
// and columns swapped): the thread's dU sums, groups x 16 x (Cg x Kp).
std::size_t winograd_filter_task_bytes(const Window2d& g) {
  const WinogradShape ws{g};
  return WinogradTask::bytes(g) + Carve::bytes<float>(g.groups * 16 * ws.Cg * ws.Kp);
}

// dM = A dY A^T for every tile of rows [ti0, ti1) and filter, A = [1 0; 1 1; 1 -1; 0 -1], from
// Y^T's whole tiles.
void winograd_output_gradient(const float* yt, const WinogradShape& ws, std::int64_t ti0, std::int64_t ti1,
                              float* dm) {
  const std::int64_t plane = ws.band_tiles * ws.Kp, Qw = 2 * ws.tiles_w;
  for (std::int64_t ti = ti0; ti < ti1; ++ti)
    for (std::int64_t tj = 0; tj < ws.tiles_w; ++tj) {
      const float* y00 = yt + (2 * ti * Qw + 2 * tj) * ws.Kp;
      const float* y01 = y00 + ws.Kp;
      const float* y10 = y00 + Qw * ws.Kp;
      const float* y11 = y10 + ws.Kp;
      float* out[16];
      for (int e = 0; e < 16; ++e) out[e] = dm + e * plane + ((ti - ti0) * ws.tiles_w + tj) * ws.Kp;
#pragma GCC ivdep
      for (std::int64_t k = 0; k < ws.Kp; ++k) {
        const float a[4][2] = {{y00[k], y01[k]},
                               {y00[k] + y10[k], y01[k] + y11[k]},
                               {y00[k] - y10[k], y01[k] - y11[k]},
                               {-y10[k], -y11[k]}};  // A dY
        for (int i = 0; i < 4; ++i) {
          out[4 * i][k] = a[i][0];
          out[4 * i + 1][k] = a[i][0] + a[i][1];
          out[4 * i + 2][k] = a[i][0] - a[i][1];
          out[4 * i + 3][k] = -a[i][1];
        }
      }
    }
}

// dw (+)= G^T dU G of the threads' summed dU, G^T = [1 .5 .5 0; 0 .5 -.5 0; 0 .5 .5 1].
void add_winograd_filter_sums(const std::vector<float*>& sums, float* dw, const Window2d& g, bool accumulate) {
  const WinogradShape ws{g};
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t c = 0; c < ws.Cg; ++c)
      for (std::int64_t k = 0; k < ws.Kg; ++k) {
        float d[4][4];
        for (int e = 0; e < 16; ++e) {
          float v = 0.0f;
          for (const float* sum : sums) v += sum[((grp * 16 + e) * ws.Cg + c) * ws.Kp + k];
          d[e / 4][e % 4] = v;
        }
        float t[3][4];  // G^T dU
        for (int j = 0; j < 4; ++j) {
          t[0][j] = d[0][j] + 0.5f * (d[1][j] + d[2][j]);
          t[1][j] = 0.5f * (d[1][j] - d[2][j]);
          t[2][j] = 0.5f * (d[1][j] + d[2][j]) + d[3][j];
        }
        float* out = dw + ((grp * ws.Kg + k) * ws.Cg + c) * 9;
        for (int i = 0; i < 3; ++i) {
          const float row[3] = {t[i][0] + 0.5f * (t[i][1] + t[i][2]), 0.5f * (t[i][1] - t[i][2]),
                                0.5f * (t[i][1] + t[i][2]) + t[i][3]};
          for (int j = 0; j < 3; ++j) out[i * 3 + j] = accumulate ? out[i * 3 + j] + row[j] : row[j];
        }
      }
}

void winograd_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                              std::byte* workspace) {
  const WinogradShape ws{g};
  const std::int64_t PQ = g.P() * g.Q(), Qw = 2 * ws.tiles_w;
  const int tasks = tasks_for(g.N);
  if (tasks == 0) {
    if (!accumulate) std::fill(dw, dw + g.K * ws.Cg * 9, 0.0f);
    return;
  }
  std::vector<float*> sums(static_cast<std::size_t>(tasks));
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * winograd_filter_task_bytes(g)};
    const WinogradTask task{carve, ws};
    float* sum = sums[static_cast<std::size_t>(t)] = carve.take<float>(g.groups * 16 * ws.Cg * ws.Kp);
    std::fill(task.yt, task.yt + 4 * ws.tiles * ws.Kp, 0.0f);  // past P, Q and Kg: zeros, never written
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        task.fill(x, g, ws, n, grp);
        const float* dyg = dy + (n * g.K + grp * ws.Kg) * PQ;
        if (g.Q() % 2 == 0) transpose_floats(dyg, PQ, ws.Kg, PQ, task.yt, ws.Kp, nullptr, false);
        else
          for (std::int64_t p = 0; p < g.P(); ++p)
            transpose_floats(dyg + p * g.Q(), PQ, ws.Kg, g.Q(), task.yt + p * Qw * ws.Kp, ws.Kp, nullptr, false);
        for (std::int64_t ti0 = 0; ti0 < ws.tiles_h; ti0 += ws.band_rows) {
          const std::int64_t ti1 = std::min(ws.tiles_h, ti0 + ws.band_rows), count = (ti1 - ti0) * ws.tiles_w;
          winograd_input(task.xp, ws, ti0, ti1, task.v);
          winograd_output_gradient(task.yt, ws, ti0, ti1, task.m);
          for (std::int64_t e = 0; e < 16; ++e)
            gathered_gemm(task.v + e * ws.band_tiles * ws.Cp, task.channel_offsets, ws.Cg, task.tile_offsets, count,
                          task.m + e * ws.band_tiles * ws.Kp, ws.Kp, sum + (grp * 16 + e) * ws.Cg * ws.Kp,
                          n != sample_begin(g.N, tasks, t) || ti0 != 0);
        }
      }
  });
  add_winograd_filter_sums(sums, dw, g, accumulate);
}

}  // namespace conv_detail

}  // namespace accrue::kernels::cpu
