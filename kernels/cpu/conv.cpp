// Convolution on the CPU: im2col and GEMM. Each pool thread takes whole samples, so every GEMM is
// single-threaded and its im2col matrix (one sample, one group) stays in that core's cache; the
// weight gradient is summed in one buffer per thread and added up at the end.

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "accrue/kernels/cpu/conv.hpp"

#include "accrue/kernels/common/half.hpp"
#include "accrue/kernels/cpu/bf16_gemm.hpp"
#include "accrue/kernels/cpu/cast.hpp"
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

namespace {

// v as U: float32 rounded to bfloat16 bits, bfloat16 bits widened, or as it is.
template <class U, class T>
U as(T v) {
  if constexpr (std::is_same_v<T, U>) return v;
  else if constexpr (std::is_same_v<U, std::uint16_t>) return common::bf16_bits_from_float(v);
  else return common::float_from_bf16_bits(v);
}

// Row k of the im2col matrix of one sample and group x (channels of T), P Q values of U: tap k =
// (c, r, s) of every output position, zero where it falls in the padding.
template <class T, class U>
void im2col_row(const T* x, const Window2d& g, std::int64_t k, U* dst) {
  const std::int64_t P = g.P(), Q = g.Q();
  const std::int64_t c = k / (g.R * g.S), r = k / g.S % g.R, s = k % g.S;
  const T* xc = x + c * g.H * g.W;
  const ValidRange rows = valid_outputs(P, g.H, g.stride_h, g.pad_h, g.dilation_h, r);
  const ValidRange cols = valid_outputs(Q, g.W, g.stride_w, g.pad_w, g.dilation_w, s);
  std::fill(dst, dst + rows.lo * Q, U{0});
  for (std::int64_t p = rows.lo; p < rows.hi; ++p) {
    U* d = dst + p * Q;
    const T* src = xc + g.in_row(p, r) * g.W;
    std::fill(d, d + cols.lo, U{0});
    if (g.stride_w == 1) {
      const T* from = src + g.in_col(cols.lo, s);
      if constexpr (std::is_same_v<T, U>)
        std::memcpy(d + cols.lo, from, static_cast<std::size_t>(cols.hi - cols.lo) * sizeof(T));
      else
        for (std::int64_t q = 0; q < cols.hi - cols.lo; ++q) d[cols.lo + q] = as<U>(from[q]);
    } else {
      for (std::int64_t q = cols.lo; q < cols.hi; ++q) d[q] = as<U>(src[g.in_col(q, s)]);
    }
    std::fill(d + cols.hi, d + Q, U{0});
  }
  std::fill(dst + rows.hi * Q, dst + P * Q, U{0});
}

}  // namespace

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

namespace {

// db[k] (+)= the sum of dy over samples and positions of filter k: each sample's positions in 16
// float32 lanes (a loop that vectorises), the samples in double; filters split across the pool.
template <class T>
void backward_bias(const T* dy, float* db, const Window2d& g, bool accumulate) {
  const std::int64_t PQ = g.P() * g.Q();
  parallel_for(g.K, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, g.N * PQ)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t k = begin; k < end; ++k) {
                   double s = 0.0;
                   for (std::int64_t n = 0; n < g.N; ++n) {
                     const T* p = dy + (n * g.K + k) * PQ;
                     float lanes[16] = {};
                     std::int64_t i = 0;
                     for (; i + 16 <= PQ; i += 16)
                       for (int l = 0; l < 16; ++l) lanes[l] += as<float>(p[i + l]);
                     for (; i < PQ; ++i) lanes[0] += as<float>(p[i]);
                     float part = 0.0f;
                     for (const float v : lanes) part += v;
                     s += part;
                   }
                   db[k] = accumulate ? db[k] + static_cast<float>(s) : static_cast<float>(s);
                 }
               });
}

}  // namespace

void conv2d_backward_bias(const float* dy, float* db, const Window2d& g, bool accumulate) {
  backward_bias(dy, db, g, accumulate);
}

// ---- bfloat16 ------------------------------------------------------------------------------------
// The same loops with bfloat16 products: each sample's im2col matrix is written straight into the
// pair layout the bfloat16 kernels read (Bf16B), and the weight's packs are made once per call, or
// once per accumulation window when parameter packs are open.

namespace {

// Per pool task: a workspace of `bytes`, carved into 64-byte aligned pieces.
class Carve {
 public:
  explicit Carve(std::byte* at) : at_(at) {}
  template <class T>
  T* take(std::int64_t count) {
    T* p = reinterpret_cast<T*>(at_);
    at_ += aligned(static_cast<std::size_t>(count) * sizeof(T));
    return p;
  }
  static std::size_t aligned(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

 private:
  std::byte* at_;
};

std::uint32_t pair(std::uint16_t lo, std::uint16_t hi) { return static_cast<std::uint32_t>(lo) | (std::uint32_t{hi} << 16); }

// The im2col matrix (patch x P Q) of one sample and group as B of a product, in `out` (K = patch,
// N = P Q); `rows` holds 2 P Q values.
void im2col_as_b(const std::uint16_t* x, const Window2d& g, Bf16B& out, std::uint16_t* rows) {
  const std::int64_t PQ = g.P() * g.Q(), patch = g.patch_size();
  std::uint16_t* r0 = rows;
  std::uint16_t* r1 = rows + PQ;
  for (std::int64_t q = 0; q < out.Kp / 2; ++q) {
    std::uint32_t* o = out.pairs() + q * out.Np;
    const std::int64_t k = 2 * q;
    if (k < patch) im2col_row(x, g, k, r0);
    else std::fill(r0, r0 + PQ, std::uint16_t{0});
    if (k + 1 < patch) im2col_row(x, g, k + 1, r1);
    else std::fill(r1, r1 + PQ, std::uint16_t{0});
    for (std::int64_t n = 0; n < PQ; ++n) o[n] = pair(r0[n], r1[n]);
    std::fill(o + PQ, o + out.Np, 0u);
  }
}

// The transposed im2col matrix (P Q x patch) of one sample and group as B (K = P Q, N = patch);
// `row` holds out.Kp values.
void im2col_transposed_as_b(const std::uint16_t* x, const Window2d& g, Bf16B& out, std::uint16_t* row) {
  const std::int64_t PQ = g.P() * g.Q(), pairs = out.Kp / 2;
  std::fill(row + PQ, row + out.Kp, std::uint16_t{0});
  for (std::int64_t n = 0; n < out.Np; ++n) {
    std::uint32_t* o = out.pairs() + n;
    if (n < out.N) {
      im2col_row(x, g, n, row);
      for (std::int64_t q = 0; q < pairs; ++q) o[q * out.Np] = pair(row[2 * q], row[2 * q + 1]);
    } else {
      for (std::int64_t q = 0; q < pairs; ++q) o[q * out.Np] = 0u;
    }
  }
}

// Values of one sample's group of x.
std::int64_t group_values(const Window2d& g) { return g.channels_per_group() * g.H * g.W; }

// Group `grp` of sample n of x as bfloat16: in x itself, or rounded into `buffer` (group_values)
// once, rather than once for every tap that reads it.
const std::uint16_t* group_as_bf16(const void* x, DType x_type, const Window2d& g, std::int64_t n, std::int64_t grp,
                                   std::uint16_t* buffer) {
  const std::int64_t offset = (n * g.C + grp * g.channels_per_group()) * g.H * g.W;
  if (x_type == DType::bf16) return static_cast<const std::uint16_t*>(x) + offset;
  cast(static_cast<const float*>(x) + offset, DType::f32, buffer, DType::bf16, group_values(g));
  return buffer;
}

std::size_t group_buffer_bytes(const Window2d& g, DType x_type) {
  return x_type == DType::bf16 ? 0 : Carve::aligned(static_cast<std::size_t>(group_values(g)) * 2);
}

// Per-task workspace bytes of each bfloat16 body.
std::size_t forward_task_bytes(const Window2d& g, DType x_type) {
  const std::int64_t PQ = g.P() * g.Q();
  return Carve::aligned(Bf16B::values(g.patch_size(), PQ) * 2) + Carve::aligned(2 * PQ * 2) +
         group_buffer_bytes(g, x_type);
}
std::size_t backward_data_task_bytes(const Window2d& g, DType dx_type) {
  const std::int64_t PQ = g.P() * g.Q();
  return Carve::aligned(Bf16B::values(g.filters_per_group(), PQ) * 2) +
         Carve::aligned(static_cast<std::size_t>(g.patch_size() * PQ) * 4) +
         (dx_type == DType::f32 ? 0 : Carve::aligned(static_cast<std::size_t>(g.channels_per_group() * g.H * g.W) * 4));
}
std::size_t backward_filter_task_bytes(const Window2d& g, DType x_type) {
  const std::int64_t PQ = g.P() * g.Q();
  return Carve::aligned(Bf16A::values(g.filters_per_group(), PQ) * 2) +
         Carve::aligned(Bf16B::values(PQ, g.patch_size()) * 2) + Carve::aligned(bf16_padded_k(PQ) * 2) +
         group_buffer_bytes(g, x_type);
}

// The weight of each group packed as A: W_g (Kg x patch), or W_g^T (patch x Kg) when `transposed`.
struct WeightPacks {
  std::vector<std::optional<Bf16A>> fresh;
  std::vector<const Bf16A*> group;
  WeightPacks(const float* w, const ParameterOperand* param, const Window2d& g, bool transposed)
      : fresh(static_cast<std::size_t>(g.groups)) {
    const std::int64_t Kg = g.filters_per_group(), patch = g.patch_size();
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      const float* wg = w + grp * Kg * patch;
      group.push_back(transposed ? &pack_bf16_a(param, true, patch, Kg, wg, DType::f32, patch, fresh[grp])
                                 : &pack_bf16_a(param, false, Kg, patch, wg, DType::f32, patch, fresh[grp]));
    }
  }
};

}  // namespace

void conv2d_forward_bf16(const void* x, DType x_type, const float* w, const ParameterOperand* w_param,
                         const float* bias, std::uint16_t* y, const Window2d& g, std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group();
  const WeightPacks packs{w, w_param, g, false};
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * forward_task_bytes(g, x_type)};
    Bf16B col{g.patch_size(), PQ, carve.take<std::uint16_t>(Bf16B::values(g.patch_size(), PQ))};
    std::uint16_t* rows = carve.take<std::uint16_t>(2 * PQ);
    std::uint16_t* rounded = carve.take<std::uint16_t>(group_values(g));
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        im2col_as_b(group_as_bf16(x, x_type, g, n, grp, rounded), g, col, rows);
        bf16_gemm(*packs.group[grp], col,
                  {.C = y + (n * g.K + grp * Kg) * PQ, .type = DType::bf16, .ldc = PQ,
                   .row_bias = bias != nullptr ? bias + grp * Kg : nullptr});
      }
  });
}

namespace {

template <class T>
void backward_data_bf16(const std::uint16_t* dy, const float* w, const ParameterOperand* w_param, T* dx,
                        const Window2d& g, bool accumulate, std::byte* workspace) {
  constexpr DType dx_type = std::is_same_v<T, float> ? DType::f32 : DType::bf16;
  const std::int64_t PQ = g.P() * g.Q(), Cg = g.channels_per_group(), Kg = g.filters_per_group(),
                     patch = g.patch_size(), sample = Cg * g.H * g.W;
  const WeightPacks packs{w, w_param, g, true};
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * backward_data_task_bytes(g, dx_type)};
    Bf16B dyp{Kg, PQ, carve.take<std::uint16_t>(Bf16B::values(Kg, PQ))};
    float* col = carve.take<float>(patch * PQ);
    float* sum = dx_type == DType::f32 ? nullptr : carve.take<float>(sample);
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pack_bf16(dyp, false, dy + (n * g.K + grp * Kg) * PQ, DType::bf16, PQ);
        bf16_gemm(*packs.group[grp], dyp, {.C = col, .type = DType::f32, .ldc = PQ});  // W_g^T dy
        T* dxg = dx + (n * g.C + grp * Cg) * g.H * g.W;
        if constexpr (std::is_same_v<T, float>) {
          if (!accumulate) std::fill(dxg, dxg + sample, 0.0f);
          col2im_add(col, g, dxg);
        } else {  // summed in float32, rounded once
          std::fill(sum, sum + sample, 0.0f);
          col2im_add(col, g, sum);
          for (std::int64_t i = 0; i < sample; ++i)
            dxg[i] = as<std::uint16_t>(accumulate ? sum[i] + as<float>(dxg[i]) : sum[i]);
        }
      }
  });
}

}  // namespace

void conv2d_backward_filter_bf16(const std::uint16_t* dy, const void* x, DType x_type, float* dw, const Window2d& g,
                                 bool accumulate, std::byte* workspace, float* partials) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group(), patch = g.patch_size(), wsize = g.K * patch;
  if (g.N == 0) {
    if (!accumulate) std::fill(dw, dw + wsize, 0.0f);
    return;
  }
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * backward_filter_task_bytes(g, x_type)};
    Bf16A dya{Kg, PQ, carve.take<std::uint16_t>(Bf16A::values(Kg, PQ))};
    Bf16B colt{PQ, patch, carve.take<std::uint16_t>(Bf16B::values(PQ, patch))};
    std::uint16_t* row = carve.take<std::uint16_t>(colt.Kp);
    std::uint16_t* rounded = carve.take<std::uint16_t>(group_values(g));
    float* out = t == 0 ? dw : partials + (t - 1) * wsize;
    bool first = t != 0 || !accumulate;
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pack_bf16(dya, false, dy + (n * g.K + grp * Kg) * PQ, DType::bf16, PQ);
        im2col_transposed_as_b(group_as_bf16(x, x_type, g, n, grp, rounded), g, colt, row);
        // dW_g (Kg, patch) += dy_g (Kg, PQ) col^T (PQ, patch), in float32
        bf16_gemm(dya, colt, {.C = out + grp * Kg * patch, .type = DType::f32, .ldc = patch, .beta = first ? 0.0f : 1.0f});
      }
      first = false;
    }
  });
  for (int t = 1; t < tasks; ++t) {
    const float* part = partials + (t - 1) * wsize;
    for (std::int64_t i = 0; i < wsize; ++i) dw[i] += part[i];
  }
}

Bf16ConvWorkspace conv2d_bf16_workspace_bytes(const Window2d& g, DType x_type) {
  const auto all = [&](std::size_t per_task) { return static_cast<std::size_t>(tasks_for(g.N)) * per_task; };
  return {.forward = all(forward_task_bytes(g, x_type)),
          .backward_data = all(backward_data_task_bytes(g, x_type)),
          .backward_filter = all(backward_filter_task_bytes(g, x_type))};
}

void conv2d_backward_data_bf16(const std::uint16_t* dy, const float* w, const ParameterOperand* w_param, void* dx,
                               DType dx_type, const Window2d& g, bool accumulate, std::byte* workspace) {
  if (dx_type == DType::f32) backward_data_bf16(dy, w, w_param, static_cast<float*>(dx), g, accumulate, workspace);
  else backward_data_bf16(dy, w, w_param, static_cast<std::uint16_t*>(dx), g, accumulate, workspace);
}

void conv2d_backward_bias_bf16(const std::uint16_t* dy, float* db, const Window2d& g, bool accumulate) {
  backward_bias(dy, db, g, accumulate);
}

}  // namespace accrue::kernels::cpu
