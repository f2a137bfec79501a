// Convolution on the CPU: im2col and GEMM. Each pool thread takes whole samples, so every GEMM is
// single-threaded and its im2col matrix (one sample, one group) stays in that core's cache; the
// weight gradient is summed in one buffer per thread and added up at the end.

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "accrue/kernels/cpu/conv.hpp"

#include "accrue/kernels/common/half.hpp"
#include "accrue/kernels/cpu/bf16_gemm.hpp"
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

// Row k of the im2col matrix of one sample and group x: tap k = (c, r, s) of every output
// position, zero where it falls in the padding.
void im2col_row(const float* x, const Window2d& g, std::int64_t k, float* dst) {
  const std::int64_t P = g.P(), Q = g.Q();
  const std::int64_t c = k / (g.R * g.S), r = k / g.S % g.R, s = k % g.S;
  const float* xc = x + c * g.H * g.W;
  const ValidRange rows = valid_outputs(P, g.H, g.stride_h, g.pad_h, g.dilation_h, r);
  const ValidRange cols = valid_outputs(Q, g.W, g.stride_w, g.pad_w, g.dilation_w, s);
  std::fill(dst, dst + rows.lo * Q, 0.0f);
  for (std::int64_t p = rows.lo; p < rows.hi; ++p) {
    float* d = dst + p * Q;
    const float* src = xc + g.in_row(p, r) * g.W;
    std::fill(d, d + cols.lo, 0.0f);
    if (g.stride_w == 1)
      std::memcpy(d + cols.lo, src + g.in_col(cols.lo, s), static_cast<std::size_t>(cols.hi - cols.lo) * sizeof(float));
    else
      for (std::int64_t q = cols.lo; q < cols.hi; ++q) d[q] = src[g.in_col(q, s)];
    std::fill(d + cols.hi, d + Q, 0.0f);
  }
  std::fill(dst + rows.hi * Q, dst + P * Q, 0.0f);
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


// The bfloat16 kernels need AVX-512 (AVX-512 BF16 or AMX), so their packing may use it too: rows of
// a small image (14, 28 values) are shorter than the vector loops compilers make, which then run
// scalar; masked loads and stores take a whole row in one or two steps.
#if defined(__x86_64__)
#define ACCRUE_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// out[q] = Bf16B::pair(a[q], b[q]) for q < n.
ACCRUE_TARGET_AVX512 void interleave(const std::uint16_t* a, const std::uint16_t* b, std::uint32_t* out, std::int64_t n) {
  for (std::int64_t q = 0; q < n; q += 16) {
    const __mmask16 m = n - q >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (n - q)) - 1u);
    const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, a + q));
    const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, b + q));
    _mm512_mask_storeu_epi32(out + q, m, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
  }
}

// out[n] = the 32-bit word at a + taps[n] (two neighbouring bfloat16 values) for n < count; a
// gather pays for itself from a whole vector of taps (a 3x3 kernel on one channel has nine).
ACCRUE_TARGET_AVX512 void gather_words(const std::uint16_t* a, const std::int32_t* taps, std::uint32_t* out,
                                       std::int64_t count) {
  if (count < 16) {
    for (std::int64_t n = 0; n < count; ++n) std::memcpy(out + n, a + taps[n], 4);
    return;
  }
  for (std::int64_t n = 0; n < count; n += 16) {
    const __mmask16 m = count - n >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (count - n)) - 1u);
    const __m512i at = _mm512_maskz_loadu_epi32(m, taps + n);
    _mm512_mask_storeu_epi32(out + n, m, _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, at, a, 2));
  }
}
#else
void interleave(const std::uint16_t* a, const std::uint16_t* b, std::uint32_t* out, std::int64_t n) {
  for (std::int64_t q = 0; q < n; ++q) out[q] = Bf16B::pair(a[q], b[q]);
}
void gather_words(const std::uint16_t* a, const std::int32_t* taps, std::uint32_t* out, std::int64_t count) {
  for (std::int64_t n = 0; n < count; ++n) std::memcpy(out + n, a + taps[n], 4);
}
#endif

// One sample's group of x as bfloat16 with its zero padding written out, (Cg, H + 2 pad_h,
// W + 2 pad_w): every tap of every output position then reads inside it, without bounds to check.
struct PaddedGroup {
  std::int64_t Hp, Wp;
  explicit PaddedGroup(const Window2d& g) : Hp(g.H + 2 * g.pad_h), Wp(g.W + 2 * g.pad_w) {}
  std::int64_t values(const Window2d& g) const { return g.channels_per_group() * Hp * Wp; }
  // Offset of tap k = (c, r, s) of output position (0, 0).
  std::int64_t tap(const Window2d& g, std::int64_t k) const {
    const std::int64_t c = k / (g.R * g.S), r = k / g.S % g.R, s = k % g.S;
    return (c * Hp + r * g.dilation_h) * Wp + s * g.dilation_w;
  }
  // Offset of output position m = (p, q) from its taps' (0, 0).
  std::int64_t position(const Window2d& g, std::int64_t m) const {
    return m / g.Q() * g.stride_h * Wp + m % g.Q() * g.stride_w;
  }
  // Fills `out` (values()) from group `grp` of sample n, rounding float32 to bfloat16 once here
  // rather than once for every tap that reads a value.
  void fill(const void* x, DType x_type, const Window2d& g, std::int64_t n, std::int64_t grp, std::uint16_t* out) const {
    const std::int64_t first = (n * g.C + grp * g.channels_per_group()) * g.H * g.W;
    std::fill(out, out + values(g), std::uint16_t{0});
    for (std::int64_t c = 0; c < g.channels_per_group(); ++c)
      for (std::int64_t h = 0; h < g.H; ++h) {
        std::uint16_t* row = out + (c * Hp + h + g.pad_h) * Wp + g.pad_w;
        const std::int64_t at = first + (c * g.H + h) * g.W;
        if (x_type == DType::bf16) std::memcpy(row, static_cast<const std::uint16_t*>(x) + at, static_cast<std::size_t>(g.W) * 2);
        else for (std::int64_t w = 0; w < g.W; ++w) row[w] = common::bf16_bits_from_float(static_cast<const float*>(x)[at + w]);
      }
  }
};

// The im2col matrix (patch x P Q) of a padded group as B of a product (K = patch, N = P Q): pair
// row j holds taps 2j and 2j + 1 of every position, one output row at a time.
void im2col_as_b(const std::uint16_t* xp, const PaddedGroup& pad, const Window2d& g, Bf16B& out) {
  const std::int64_t P = g.P(), Q = g.Q(), patch = g.patch_size();
  for (std::int64_t j = 0; j < out.Kp / 2; ++j) {
    std::uint32_t* o = out.pairs() + j * out.Np;
    const std::int64_t k = 2 * j;
    if (k + 1 >= patch) {  // the last tap of an odd patch, or padding: zeros beside it
      for (std::int64_t m = 0; m < P * Q; ++m) o[m] = k < patch ? xp[pad.tap(g, k) + pad.position(g, m)] : 0u;
    } else {
      const std::uint16_t* a = xp + pad.tap(g, k);
      const std::uint16_t* b = xp + pad.tap(g, k + 1);
      for (std::int64_t p = 0; p < P; ++p) {
        const std::uint16_t* ra = a + p * g.stride_h * pad.Wp;
        const std::uint16_t* rb = b + p * g.stride_h * pad.Wp;
        std::uint32_t* op = o + p * Q;
        if (g.stride_w == 1)
          interleave(ra, rb, op, Q);
        else
          for (std::int64_t q = 0; q < Q; ++q) op[q] = Bf16B::pair(ra[q * g.stride_w], rb[q * g.stride_w]);
      }
    }
    std::fill(o + P * Q, o + out.Np, 0u);
  }
}

// The transposed im2col matrix (P Q x patch) of a padded group as B (K = P Q, N = patch): pair row
// j holds positions 2j and 2j + 1 of every tap. `taps` holds patch offsets.
void im2col_transposed_as_b(const std::uint16_t* xp, const PaddedGroup& pad, const Window2d& g, Bf16B& out,
                            std::int32_t* taps) {
  const std::int64_t PQ = g.P() * g.Q(), patch = g.patch_size();
  for (std::int64_t n = 0; n < patch; ++n) taps[n] = static_cast<std::int32_t>(pad.tap(g, n));
  for (std::int64_t j = 0; j < out.Kp / 2; ++j) {
    std::uint32_t* o = out.pairs() + j * out.Np;
    const std::int64_t m = 2 * j;
    if (m + 1 < PQ) {
      const std::uint16_t* a = xp + pad.position(g, m);
      const std::uint16_t* b = xp + pad.position(g, m + 1);
      if (b == a + 1)  // neighbours in one input row: the pair is one 32-bit word of it
        gather_words(a, taps, o, patch);
      else
        for (std::int64_t n = 0; n < patch; ++n) o[n] = Bf16B::pair(a[taps[n]], b[taps[n]]);
    } else if (m < PQ) {
      const std::uint16_t* a = xp + pad.position(g, m);
      for (std::int64_t n = 0; n < patch; ++n) o[n] = a[taps[n]];
    } else {
      std::fill(o, o + patch, 0u);
    }
    std::fill(o + patch, o + out.Np, 0u);
  }
}

bool input_gradient_is_a_convolution(const Window2d& g);
Window2d input_gradient_window(const Window2d& g);
std::size_t flipped_weight_bytes(const Window2d& g);

// Per-task workspace bytes of each bfloat16 body.
std::size_t padded_bytes(const Window2d& g) { return Carve::aligned(PaddedGroup{g}.values(g) * 2); }
std::size_t forward_task_bytes(const Window2d& g) {
  return Carve::aligned(Bf16B::values(g.patch_size(), g.P() * g.Q()) * 2) + padded_bytes(g);
}
std::size_t backward_data_task_bytes(const Window2d& g, DType dx_type) {
  if (input_gradient_is_a_convolution(g)) return forward_task_bytes(input_gradient_window(g));
  const std::int64_t PQ = g.P() * g.Q();
  return Carve::aligned(Bf16B::values(g.filters_per_group(), PQ) * 2) +
         Carve::aligned(static_cast<std::size_t>(g.patch_size() * PQ) * 4) +
         (dx_type == DType::f32 ? 0 : Carve::aligned(static_cast<std::size_t>(g.channels_per_group() * g.H * g.W) * 4));
}
std::size_t backward_filter_task_bytes(const Window2d& g) {
  const std::int64_t PQ = g.P() * g.Q();
  return Carve::aligned(Bf16A::values(g.filters_per_group(), PQ) * 2) +
         Carve::aligned(Bf16B::values(PQ, g.patch_size()) * 2) + padded_bytes(g) +
         Carve::aligned(static_cast<std::size_t>(g.patch_size()) * 4);
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

namespace {

// y (N, K, P, Q), float32 or bfloat16 = beta y + conv(x, the packed weight) + bias, in float32
// before y's one rounding.
void forward_into(const void* x, DType x_type, const WeightPacks& packs, const float* bias, void* y, DType y_type,
                  float beta, const Window2d& g, std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group();
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * forward_task_bytes(g)};
    Bf16B col{g.patch_size(), PQ, carve.take<std::uint16_t>(Bf16B::values(g.patch_size(), PQ))};
    const PaddedGroup pad{g};
    std::uint16_t* xp = carve.take<std::uint16_t>(pad.values(g));
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, x_type, g, n, grp, xp);
        im2col_as_b(xp, pad, g, col);
        bf16_gemm(*packs.group[grp], col,
                  {.C = static_cast<std::byte*>(y) + (n * g.K + grp * Kg) * PQ * static_cast<std::int64_t>(dtype_size(y_type)),
                   .type = y_type, .ldc = PQ, .beta = beta, .row_bias = bias != nullptr ? bias + grp * Kg : nullptr});
      }
  });
}

// With stride 1 and dilation 1 the input's gradient is itself a convolution: of dy, padded by
// R - 1 - pad_h and S - 1 - pad_w, with the weight flipped in space and its filters and channels
// swapped. It then runs as forward does, into dx, without an im2col matrix to scatter back.
bool input_gradient_is_a_convolution(const Window2d& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 && g.pad_h < g.R && g.pad_w < g.S;
}

Window2d input_gradient_window(const Window2d& g) {
  return {.N = g.N, .C = g.K, .H = g.P(), .W = g.Q(), .R = g.R, .S = g.S, .pad_h = g.R - 1 - g.pad_h,
          .pad_w = g.S - 1 - g.pad_w, .K = g.C, .groups = g.groups};
}

// out (C, K / groups, R, S) = w (K, C / groups, R, S) with each group's filters and channels
// swapped and every kernel turned by 180 degrees.
void flip_weight(const float* w, const Window2d& g, float* out) {
  const std::int64_t Cg = g.channels_per_group(), Kg = g.filters_per_group(), R = g.R, S = g.S;
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t k = 0; k < Kg; ++k)
      for (std::int64_t c = 0; c < Cg; ++c)
        for (std::int64_t r = 0; r < R; ++r)
          for (std::int64_t s = 0; s < S; ++s)
            out[(((grp * Cg + c) * Kg + k) * R + (R - 1 - r)) * S + (S - 1 - s)] =
                w[(((grp * Kg + k) * Cg + c) * R + r) * S + s];
}

std::size_t flipped_weight_bytes(const Window2d& g) {
  return Carve::aligned(static_cast<std::size_t>(g.K * g.patch_size()) * sizeof(float));
}

}  // namespace

void conv2d_forward_bf16(const void* x, DType x_type, const float* w, const ParameterOperand* w_param,
                         const float* bias, std::uint16_t* y, const Window2d& g, std::byte* workspace) {
  forward_into(x, x_type, WeightPacks{w, w_param, g, false}, bias, y, DType::bf16, 0.0f, g, workspace);
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
    Carve carve{workspace + t * backward_filter_task_bytes(g)};
    Bf16A dya{Kg, PQ, carve.take<std::uint16_t>(Bf16A::values(Kg, PQ))};
    Bf16B colt{PQ, patch, carve.take<std::uint16_t>(Bf16B::values(PQ, patch))};
    const PaddedGroup pad{g};
    std::uint16_t* xp = carve.take<std::uint16_t>(pad.values(g));
    std::int32_t* taps = carve.take<std::int32_t>(patch);
    float* out = t == 0 ? dw : partials + (t - 1) * wsize;
    bool first = t != 0 || !accumulate;
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pack_bf16(dya, false, dy + (n * g.K + grp * Kg) * PQ, DType::bf16, PQ);
        pad.fill(x, x_type, g, n, grp, xp);
        im2col_transposed_as_b(xp, pad, g, colt, taps);
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
  // The weight's packs as A, one per group.
  const auto packs = [&](std::int64_t rows, std::int64_t cols) {
    return static_cast<std::size_t>(g.groups * Bf16A::values(rows, cols)) * 2;
  };
  const std::int64_t Cg = g.channels_per_group(), Kg = g.filters_per_group(), taps = g.R * g.S;
  const bool as_convolution = input_gradient_is_a_convolution(g);
  return {.forward = all(forward_task_bytes(g)),
          .backward_data = all(backward_data_task_bytes(g, x_type)) + (as_convolution ? flipped_weight_bytes(g) : 0),
          .backward_filter = all(backward_filter_task_bytes(g)),
          .forward_packs = packs(Kg, Cg * taps),
          .backward_data_packs = as_convolution ? packs(Cg, Kg * taps) : packs(Cg * taps, Kg)};
}

void conv2d_backward_data_bf16(const std::uint16_t* dy, const float* w, const ParameterOperand* w_param, void* dx,
                               DType dx_type, const Window2d& g, bool accumulate, std::byte* workspace) {
  if (input_gradient_is_a_convolution(g)) {
    // The flipped weight is rearranged, so its pack is made here rather than kept.
    auto* flipped = reinterpret_cast<float*>(workspace);
    flip_weight(w, g, flipped);
    const Window2d t = input_gradient_window(g);
    return forward_into(dy, DType::bf16, WeightPacks{flipped, nullptr, t, false}, nullptr, dx, dx_type,
                        accumulate ? 1.0f : 0.0f, t, workspace + flipped_weight_bytes(g));
  }
  if (dx_type == DType::f32) backward_data_bf16(dy, w, w_param, static_cast<float*>(dx), g, accumulate, workspace);
  else backward_data_bf16(dy, w, w_param, static_cast<std::uint16_t*>(dx), g, accumulate, workspace);
}

void conv2d_backward_bias_bf16(const std::uint16_t* dy, float* db, const Window2d& g, bool accumulate) {
  backward_bias(dy, db, g, accumulate);
}

}  // namespace accrue::kernels::cpu
