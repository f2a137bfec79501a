// The bfloat16 forms: im2col written straight into the bfloat16 kernels' pair layout, and the
// implicit GEMM over channel pairs on AVX-512 BF16.

#include "../conv.hpp"
#include "forms.hpp"

namespace accrue::kernels::cpu {
using namespace conv_detail;

// ---- bfloat16 ------------------------------------------------------------------------------------
// The same loops with bfloat16 products: each sample's im2col matrix is written straight into the
// pair layout the bfloat16 kernels read (Bf16B), and the weight's packs are made once per call, or
// once per accumulation window when parameter packs are open.

namespace conv_detail {

// The bfloat16 kernels need AVX-512 (AVX-512 BF16 or AMX), so their packing may use it too: rows of
// a small image (14, 28 values) are shorter than the vector loops compilers make, which then run
// scalar; masked loads and stores take a whole row in one or two steps.
#if defined(__x86_64__)

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

// Per-task workspace bytes of each bfloat16 body.
std::size_t padded_bytes(const Window2d& g) { return Carve::bytes<std::uint16_t>(PaddedGroup{g}.values(g)); }
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
    pad.clear(g, xp);
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

// ---- bfloat16 on AVX-512 BF16: the implicit GEMM over channel pairs ------------------------------
// vdpbf16ps multiplies pairs of bfloat16 values along the reduction. A pair here is two neighbouring
// channels at one tap: the padded image is interleaved two channels at a time (an odd count gets a
// zero channel), so that tap (channel pair, r, s) of a position is one 32-bit word of it, broadcast
// against the pairs of 16 filters of the weight, packed likewise once per call. On processors with
// AMX the tiles' GEMM above stays.

#if defined(__x86_64__)
#define ACCRUE_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// gathered_tile with A(i, l) and B(l) pairs of bfloat16 values: A's the 32-bit word at
// x + row_off[i] + col_off[l], offsets counted in bfloat16 values (a pair may start at any of them).
template <int MR, int NV>
ACCRUE_TARGET_AVX512_BF16 void pair_tile(const std::uint16_t* x, const std::int32_t* row_off,
                                         const std::int32_t* col_off, std::int64_t L, const std::uint32_t* b,
                                         std::int64_t ldb, float* c, std::int64_t ldc, bool accumulate) {
  const std::uint16_t* a[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) a[r] = x + row_off[r];
  __m512 acc[MR][NV];
  load_tile<MR, NV>(acc, c, ldc, accumulate);
  for (std::int64_t l = 0; l < L; ++l) {
    __m512bh bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + l * ldb + 16 * v));
    const std::int64_t o = col_off[l];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      std::int32_t word;
      std::memcpy(&word, a[r] + o, sizeof word);
      const __m512bh ar = reinterpret_cast<__m512bh>(_mm512_set1_epi32(word));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, bv[v]);
    }
  }
  store_tile<MR, NV>(acc, c, ldc);
}

template <int MR, int NV>
struct PairTile {
  static constexpr auto run = &pair_tile<MR, NV>;
};
constexpr GatheredTiles<std::uint16_t, std::uint32_t> pair_tiles =
    tiles_of<std::uint16_t, std::uint32_t, PairTile>(std::make_integer_sequence<int, 8>{});
#else
constexpr GatheredTiles<std::uint16_t, std::uint32_t> pair_tiles = {};
#endif

bool pair_tiles_available() {
  static const bool yes = [] {
    const std::vector<Bf16Kernel> kernels = bf16_kernels_available();
    return std::find(kernels.begin(), kernels.end(), Bf16Kernel::avx512_bf16) != kernels.end();
  }();
  return yes;
}

// Whether the pair GEMM runs a bfloat16 pass with `channels` output channels per group (on its
// own only where AMX's tiles are not there to run the other form).
bool pairs_run(const Window2d& g, std::int64_t channels) {
  return runs_implicit(g, channels, pair_tiles_available(), bf16_kernel() == Bf16Kernel::avx512_bf16);
}
bool forward_runs_pairs(const Window2d& g) { return pairs_run(g, g.filters_per_group()); }
bool input_gradient_runs_pairs(const Window2d& g) {
  return input_gradient_is_a_convolution(g) && pairs_run(g, g.channels_per_group());
}

// Channel pairs of a group, and pair taps (channel pair, r, s) of its patch.
std::int64_t channel_pairs(const Window2d& g) { return (g.channels_per_group() + 1) / 2; }
std::int64_t pair_taps(const Window2d& g) { return channel_pairs(g) * g.R * g.S; }

// The weight of each group as pairs of bfloat16 values, (pair taps x Kg) in rows of lanes16(Kg).
std::size_t packed_pairs_bytes(const Window2d& g) {
  return Carve::bytes<std::uint32_t>(g.groups * pair_taps(g) * lanes16(g.filters_per_group()));
}
void pack_weight_pairs(const float* w, const Window2d& g, std::uint32_t* out) {
  const std::int64_t Kg = g.filters_per_group(), Kp = lanes16(Kg), Cg = g.channels_per_group(), RS = g.R * g.S,
                     L = pair_taps(g);
  std::fill(out, out + g.groups * L * Kp, 0u);
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t k = 0; k < Kg; ++k)
      for (std::int64_t c = 0; c < Cg; ++c)
        for (std::int64_t rs = 0; rs < RS; ++rs) {
          const std::uint32_t v = common::bf16_bits_from_float(w[((grp * Kg + k) * Cg + c) * RS + rs]);
          out[(grp * L + c / 2 * RS + rs) * Kp + k] |= v << (16 * (c % 2));  // Bf16B::pair's order
        }
}

std::size_t pair_forward_task_bytes(const Window2d& g) {
  const PaddedGroup pad{g};
  const std::int64_t plane = pad.Hp * pad.Wp, pairs = channel_pairs(g);
  return Carve::bytes<std::uint16_t>(2 * pairs * plane) + Carve::bytes<std::uint32_t>(pairs * plane) +
         Carve::bytes<float>(g.P() * g.Q() * lanes16(g.filters_per_group())) + offsets_bytes(g, pair_taps(g));
}

// y (+)= conv(x, the packed pairs) + bias, y float32 or bfloat16 (rounded once): as
// implicit_forward, over the channel-pair image.
template <class Y>
void pair_forward(const void* x, DType x_type, const std::uint32_t* packed, const float* bias, Y* y, bool accumulate,
                  const Window2d& g, std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group(), Kp = lanes16(Kg), L = pair_taps(g),
                     pairs = channel_pairs(g);
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * pair_forward_task_bytes(g)};
    const PaddedGroup pad{g};
    const std::int64_t plane = pad.Hp * pad.Wp;
    std::uint16_t* xp = carve.take<std::uint16_t>(2 * pairs * plane);
    std::uint32_t* xq = carve.take<std::uint32_t>(pairs * plane);
    float* yt = carve.take<float>(PQ * Kp);
    std::int32_t* positions = carve.take<std::int32_t>(PQ);
    std::int32_t* taps = carve.take<std::int32_t>(L);
    fill_offsets(pad, g, positions, taps, L);
    for (std::int64_t m = 0; m < PQ; ++m) positions[m] *= 2;  // in bfloat16 values of the pair image
    for (std::int64_t l = 0; l < L; ++l) taps[l] *= 2;
    // The padding and an odd count's zero channel, which fill() never writes.
    std::fill(xp, xp + 2 * pairs * plane, std::uint16_t{0});
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, x_type, g, n, grp, xp);
        for (std::int64_t p = 0; p < pairs; ++p) interleave(xp + 2 * p * plane, xp + (2 * p + 1) * plane, xq + p * plane, plane);
        gathered_gemm(pair_tiles, reinterpret_cast<const std::uint16_t*>(xq), positions, PQ, taps, L,
                      packed + grp * L * Kp, Kp, yt, false);
        transpose(yt, Kp, PQ, Kg, y + (n * g.K + grp * Kg) * PQ, PQ, bias != nullptr ? bias + grp * Kg : nullptr,
                  accumulate);
      }
  });
}

// The weight's gradient sums over positions, so its pairs are two neighbouring positions of one
// output row (stride 1 along rows, rows of even length): the word at tap + position(2 l) of the
// plain bfloat16 image, against dy's pair (2 l, 2 l + 1) of 16 filters, which is dy read as 32-bit
// words and transposed.
bool filter_runs_pairs(const Window2d& g) {
  return pairs_run(g, g.filters_per_group()) && g.stride_w == 1 && g.Q() % 2 == 0;
}

std::size_t pair_filter_task_bytes(const Window2d& g) {
  const std::int64_t Kp = lanes16(g.filters_per_group()), pairs = g.P() * g.Q() / 2;
  return Carve::bytes<std::uint16_t>(PaddedGroup{g}.values(g)) + Carve::bytes<std::uint32_t>(pairs * Kp) +
         Carve::bytes<std::int32_t>(pairs) + Carve::bytes<std::int32_t>(g.patch_size()) +
         Carve::bytes<float>(g.groups * g.patch_size() * Kp);
}

void pair_backward_filter(const std::uint16_t* dy, const void* x, DType x_type, float* dw, const Window2d& g,
                          bool accumulate, std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), pairs = PQ / 2, Kg = g.filters_per_group(), Kp = lanes16(Kg),
                     patch = g.patch_size();
  const int tasks = tasks_for(g.N);
  std::vector<float*> sums(static_cast<std::size_t>(tasks));
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * pair_filter_task_bytes(g)};
    const PaddedGroup pad{g};
    std::uint16_t* xp = carve.take<std::uint16_t>(pad.values(g));
    pad.clear(g, xp);
    std::uint32_t* dyq = carve.take<std::uint32_t>(pairs * Kp);
    std::int32_t* positions = carve.take<std::int32_t>(pairs);
    std::int32_t* taps = carve.take<std::int32_t>(patch);
    float* sum = sums[static_cast<std::size_t>(t)] = carve.take<float>(g.groups * patch * Kp);
    for (std::int64_t l = 0; l < pairs; ++l) positions[l] = static_cast<std::int32_t>(pad.position(g, 2 * l));
    for (std::int64_t k = 0; k < patch; ++k) taps[k] = static_cast<std::int32_t>(pad.tap(g, k));
    std::fill(dyq, dyq + pairs * Kp, 0u);  // the columns beyond Kg stay zero
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, x_type, g, n, grp, xp);
        // The words move through the float32 transpose untouched (no arithmetic on them).
        transpose(reinterpret_cast<const float*>(dy + (n * g.K + grp * Kg) * PQ), pairs, Kg, pairs,
                  reinterpret_cast<float*>(dyq), Kp, nullptr, false);
        gathered_gemm(pair_tiles, xp, taps, patch, positions, pairs, dyq, Kp, sum + grp * patch * Kp,
                      n != sample_begin(g.N, tasks, t));
      }
  });
  add_transposed_sums(sums, dw, g, accumulate);
}

}  // namespace conv_detail

void conv2d_forward_bf16(const void* x, DType x_type, const float* w, const ParameterOperand* w_param,
                         const float* bias, std::uint16_t* y, const Window2d& g, std::byte* workspace) {
  if (!forward_runs_pairs(g))
    return forward_into(x, x_type, WeightPacks{w, w_param, g, false}, bias, y, DType::bf16, 0.0f, g, workspace);
  auto* packed = reinterpret_cast<std::uint32_t*>(workspace);
  pack_weight_pairs(w, g, packed);
  pair_forward(x, x_type, packed, bias, y, false, g, workspace + packed_pairs_bytes(g));
}

namespace conv_detail {

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

}  // namespace conv_detail

void conv2d_backward_filter_bf16(const std::uint16_t* dy, const void* x, DType x_type, float* dw, const Window2d& g,
                                 bool accumulate, std::byte* workspace) {
  if (filter_runs_pairs(g)) return pair_backward_filter(dy, x, x_type, dw, g, accumulate, workspace);
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group(), patch = g.patch_size(), wsize = g.K * patch;
  if (g.N == 0) {
    if (!accumulate) std::fill(dw, dw + wsize, 0.0f);
    return;
  }
  const int tasks = tasks_for(g.N);
  auto* partials = reinterpret_cast<float*>(workspace + tasks * backward_filter_task_bytes(g));
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * backward_filter_task_bytes(g)};
    Bf16A dya{Kg, PQ, carve.take<std::uint16_t>(Bf16A::values(Kg, PQ))};
    Bf16B colt{PQ, patch, carve.take<std::uint16_t>(Bf16B::values(PQ, patch))};
    const PaddedGroup pad{g};
    std::uint16_t* xp = carve.take<std::uint16_t>(pad.values(g));
    pad.clear(g, xp);
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
  add_partials(partials, dw, g);
}

ConvWorkspaceBytes conv2d_bf16_workspace_bytes(const Window2d& g, DType x_type) {
  const auto all = [&](std::size_t per_task) { return static_cast<std::size_t>(tasks_for(g.N)) * per_task; };
  // The weight's packs as A, one per group.
  const auto packs = [&](std::int64_t rows, std::int64_t cols) {
    return static_cast<std::size_t>(g.groups * Bf16A::values(rows, cols)) * 2;
  };
  const std::int64_t Cg = g.channels_per_group(), Kg = g.filters_per_group(), taps = g.R * g.S;
  const bool as_convolution = input_gradient_is_a_convolution(g);
  const Window2d t = input_gradient_window(g);
  ConvWorkspaceBytes bytes{
      .forward = all(forward_task_bytes(g)),
      .backward_data = all(backward_data_task_bytes(g, x_type)) + (as_convolution ? flipped_weight_bytes(g) : 0),
      .backward_filter = all(backward_filter_task_bytes(g)) + partials_bytes(g),
      .forward_packs = packs(Kg, Cg * taps),
      .backward_data_packs = as_convolution ? packs(Cg, Kg * taps) : packs(Cg * taps, Kg),
      // The flipped weight's pack is made on every call.
      .kept_forward = packs(Kg, Cg * taps),
      .kept_backward_data = as_convolution ? 0 : packs(Cg * taps, Kg)};
  // The pair GEMM packs its weight into the workspace on every call, and keeps nothing.
  if (forward_runs_pairs(g)) {
    bytes.forward = packed_pairs_bytes(g) + all(pair_forward_task_bytes(g));
    bytes.forward_packs = bytes.kept_forward = 0;
  }
  if (input_gradient_runs_pairs(g)) {
    bytes.backward_data = flipped_weight_bytes(g) + packed_pairs_bytes(t) + all(pair_forward_task_bytes(t));
    bytes.backward_data_packs = bytes.kept_backward_data = 0;
  }
  if (filter_runs_pairs(g)) bytes.backward_filter = all(pair_filter_task_bytes(g));
  return bytes;
}

void conv2d_backward_data_bf16(const std::uint16_t* dy, const float* w, const ParameterOperand* w_param, void* dx,
                               DType dx_type, const Window2d& g, bool accumulate, std::byte* workspace) {
  if (input_gradient_runs_pairs(g)) {
    auto* flipped = reinterpret_cast<float*>(workspace);
    flip_weight(w, g, flipped);
    const Window2d t = input_gradient_window(g);
    auto* packed = reinterpret_cast<std::uint32_t*>(workspace + flipped_weight_bytes(g));
    pack_weight_pairs(flipped, t, packed);
    std::byte* rest = workspace + flipped_weight_bytes(g) + packed_pairs_bytes(t);
    if (dx_type == DType::f32) return pair_forward(dy, DType::bf16, packed, nullptr, static_cast<float*>(dx), accumulate, t, rest);
    return pair_forward(dy, DType::bf16, packed, nullptr, static_cast<std::uint16_t*>(dx), accumulate, t, rest);
  }
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
