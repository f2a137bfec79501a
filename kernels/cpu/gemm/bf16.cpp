// bfloat16 GEMM with float32 accumulation, on AMX tiles or with AVX-512 BF16 dot products.
//
// Which is faster depends on the processor, measured with microbenchmarks in one run each: on a
// Xeon with AMX, tdpbf16ps reached 1000 GFLOP/s per core while vdpbf16ps ran at 61, below float32
// FMA (148); on an EPYC (Zen 4, no AMX) vdpbf16ps runs at 230 GFLOP/s per core, twice float32 FMA
// (115). So AMX comes first where it exists, vdpbf16ps next.
//
// Both read the same packed operands. A tile multiply adds a 16 x 32 bfloat16 block of A times a
// 32 x 16 block of B, the latter stored as pairs along K ("VNNI": row p holds (B[2p][n], B[2p+1][n])
// for 16 columns n), into a 16 x 16 float32 tile of C; vdpbf16ps adds one such pair of A, broadcast,
// times a row of 16 pairs of B into 16 float32 lanes. Operands are packed into padded buffers first
// (converting from float32 and transposing as the layout needs), each 32 x 32 block of C accumulates in
// float32 and is written out (alpha, beta, the output type, transposed or not) while in cache. Linux grants AMX's 8 KiB of
// tile state per process on request (arch_prctl, in capability.cpp); without either kernel the callers widen to float32.

#include "bf16.hpp"
#include "bf16_pack.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "../../../framework/core/error.hpp"
#include "../../../framework/core/half.hpp"
#include "../capability.hpp"
#include "../parallel.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#define ACCRUE_TARGET_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw")))
#define ACCRUE_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))
#endif

namespace accrue::kernels::cpu {

namespace {

constexpr std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }

}  // namespace

// ---- packing (the loops are in bf16_pack.cpp, compiled per instruction set) ----------------------

// K's padding: whole tiles of 32 for AMX, whole pairs for vdpbf16ps (a micro-batch of 16 samples
// as K would be half padding otherwise).
std::int64_t bf16_padded_k(std::int64_t K) { return round_up(K, bf16_kernel() == Bf16Kernel::amx ? 32 : 2); }

std::size_t bf16_workspace_bytes(std::int64_t M, std::int64_t N, std::int64_t K) {
  const std::int64_t Mp = round_up(M, bf16_block), Kp = bf16_padded_k(K), Np = round_up(N, bf16_block);
  return static_cast<std::size_t>(Mp * Kp / 2 + Kp * Np / 2) * 4;
}

std::size_t bf16_pack_bytes(std::int64_t K, std::int64_t N) {
  return static_cast<std::size_t>(bf16_padded_k(K) * round_up(N, bf16_block)) * 2;
}

Bf16A::Bf16A(std::int64_t m, std::int64_t k, std::uint16_t* into)
    : M(m), K(k), Mp(round_up(m, bf16_block)), Kp(bf16_padded_k(k)), data(into) {}

Bf16A::Bf16A(std::int64_t m, std::int64_t k) : Bf16A(m, k, nullptr) {
  buffer = Tensor::empty({Mp * Kp / 2}, {.category = MemoryCategory::temporaries});
  data = static_cast<std::uint16_t*>(buffer.data_ptr());
}

std::int64_t Bf16A::values(std::int64_t M, std::int64_t K) { return round_up(M, bf16_block) * bf16_padded_k(K); }

Bf16B::Bf16B(std::int64_t k, std::int64_t n, std::uint16_t* into)
    : K(k), N(n), Kp(bf16_padded_k(k)), Np(round_up(n, bf16_block)), data(into) {}

Bf16B::Bf16B(std::int64_t k, std::int64_t n) : Bf16B(k, n, nullptr) {
  buffer = Tensor::empty({Kp * Np / 2}, {.category = MemoryCategory::temporaries});
  data = static_cast<std::uint16_t*>(buffer.data_ptr());
}

std::int64_t Bf16B::values(std::int64_t K, std::int64_t N) { return bf16_padded_k(K) * round_up(N, bf16_block); }

void pack_bf16(Bf16A& into, bool trans, const void* A, DType dtype, std::int64_t lda) {
  pack_bf16_rows(into, trans, A, dtype, lda);
}

void pack_bf16(Bf16B& into, bool trans, const void* B, DType dtype, std::int64_t ldb) {
  pack_bf16_pairs(into, trans, B, dtype, ldb);
}

Bf16A pack_bf16_a(bool trans, std::int64_t M, std::int64_t K, const void* A, DType dtype, std::int64_t lda) {
  Bf16A p{M, K};
  pack_bf16(p, trans, A, dtype, lda);
  return p;
}

Bf16B pack_bf16_b(bool trans, std::int64_t K, std::int64_t N, const void* B, DType dtype, std::int64_t ldb) {
  Bf16B p{K, N};
  pack_bf16(p, trans, B, dtype, ldb);
  return p;
}

// ---- kept parameter packs ------------------------------------------------------------------

namespace {

// One packed form of one operand: where it lies, which side of the product (or the float32 copy
// of processors without a bfloat16 kernel) and how it is read.
enum class PackKind { a, b, rounded };
struct PackKey {
  const void* data;
  PackKind kind;
  bool trans;
  std::int64_t rows, cols, ld;
  DType dtype;
  auto tie() const { return std::tie(data, kind, trans, rows, cols, ld, dtype); }
  bool operator<(const PackKey& o) const { return tie() < o.tie(); }
};

// A rounded float32 copy of a parameter, kept like a pack.
struct Rounded {
  Tensor buffer;
};

struct KeptPack {
  std::shared_ptr<const void> owner;
  std::uint64_t version;
  std::optional<Bf16A> a;
  std::optional<Bf16B> b;
  std::optional<Rounded> rounded;
};

struct ParameterPacks {
  std::mutex mutex;
  int open = 0;
  std::map<PackKey, KeptPack> kept;
  std::atomic<std::int64_t> made = 0;  // packs of parameter operands
};

ParameterPacks& parameter_packs() {
  static ParameterPacks packs;
  return packs;
}

void count_as_parameters(const Tensor& buffer) { buffer.impl()->storage->set_category(MemoryCategory::parameters); }

// The kept pack of `key` for `param`, made by `pack` when missing or stale; when packs are closed
// or the operand is no parameter, a new one in `fresh`.
template <class Packed, class Pack>
const Packed& pack_or_reuse(const ParameterOperand* param, const PackKey& key, Pack&& pack,
                            std::optional<Packed>& fresh) {
  ParameterPacks& packs = parameter_packs();
  if (param == nullptr) return fresh.emplace(pack());
  const auto counted = [&] {
    ++packs.made;
    return pack();
  };
  std::lock_guard lock{packs.mutex};
  if (packs.open == 0) return fresh.emplace(counted());
  KeptPack& entry = packs.kept[key];
  std::optional<Packed>& slot = [&]() -> std::optional<Packed>& {
    if constexpr (std::is_same_v<Packed, Bf16A>) return entry.a;
    else if constexpr (std::is_same_v<Packed, Bf16B>) return entry.b;
    else return entry.rounded;
  }();
  if (slot && entry.version == param->version && entry.owner == param->owner) return *slot;
  slot.reset();  // the old pack goes before the new one is made
  slot.emplace(counted());
  count_as_parameters(slot->buffer);
  entry.owner = param->owner;
  entry.version = param->version;
  return *slot;
}

}  // namespace

std::optional<ParameterOperand> parameter_operand(const Tensor& t) {
  if (t.category() != MemoryCategory::parameters) return std::nullopt;
  return ParameterOperand{.owner = t.impl()->storage, .version = t.impl()->storage->version()};
}

void open_parameter_packs() {
  std::lock_guard lock{parameter_packs().mutex};
  ++parameter_packs().open;
}

void close_parameter_packs() {
  ParameterPacks& packs = parameter_packs();
  std::lock_guard lock{packs.mutex};
  ACCRUE_ASSERT(packs.open > 0);
  if (--packs.open == 0) packs.kept.clear();
}

std::int64_t parameter_packs_made() { return parameter_packs().made; }

const Bf16A& pack_bf16_a(const ParameterOperand* param, bool trans, std::int64_t M, std::int64_t K, const void* A,
                         DType dtype, std::int64_t lda, std::optional<Bf16A>& fresh) {
  return pack_or_reuse(param, {A, PackKind::a, trans, M, K, lda, dtype},
                       [&] { return pack_bf16_a(trans, M, K, A, dtype, lda); }, fresh);
}

const Bf16B& pack_bf16_b(const ParameterOperand* param, bool trans, std::int64_t K, std::int64_t N, const void* B,
                         DType dtype, std::int64_t ldb, std::optional<Bf16B>& fresh) {
  return pack_or_reuse(param, {B, PackKind::b, trans, K, N, ldb, dtype},
                       [&] { return pack_bf16_b(trans, K, N, B, dtype, ldb); }, fresh);
}

const float* kept_rounded_parameter(const ParameterOperand& param, const float* data, std::int64_t n) {
  {
    std::lock_guard lock{parameter_packs().mutex};
    if (parameter_packs().open == 0) return nullptr;
  }
  std::optional<Rounded> fresh;  // filled only if the packs closed since the check above
  const Rounded& kept = pack_or_reuse(
      &param, {data, PackKind::rounded, false, n, 1, 1, DType::f32},
      [&] {
        Rounded r{Tensor::empty({n}, {.category = MemoryCategory::parameters})};
        round_through_bf16(data, r.buffer.data<float>(), n);
        return r;
      },
      fresh);
  return fresh ? nullptr : kept.buffer.data<float>();
}


namespace {

// rows x cols of a 32 x 32 float32 block (leading dimension 32), the product's rows i.. and
// columns j.., into out: one contiguous run of C at a time, so that the loops vectorise. Inlined
// into the kernels' block loops below, so that it is compiled with their instruction set.
[[gnu::always_inline]] inline void write_block(const float* acc, std::int64_t i, std::int64_t j, std::int64_t rows, std::int64_t cols,
                 const Bf16Output& out) {
  if (rows <= 0 || cols <= 0) return;  // a block wholly in the padding
  const auto store = [&](auto* C) {
    using T = std::remove_pointer_t<decltype(C)>;
    // C's runs: rows of the product, or its columns when C holds the product transposed.
    const std::int64_t runs = out.transposed ? cols : rows, length = out.transposed ? rows : cols;
    const std::int64_t step = out.transposed ? 32 : 1;  // along a run in acc
    for (std::int64_t r = 0; r < runs; ++r) {
      float v[32];
      const float* src = out.transposed ? acc + r : acc + r * 32;
      for (std::int64_t k = 0; k < length; ++k) v[k] = out.alpha * src[k * step];
      if (out.column_bias != nullptr) {
        const float* bias = out.column_bias + (out.transposed ? i : j);  // C's columns along the run
        for (std::int64_t k = 0; k < length; ++k) v[k] += bias[k];
      }
      if (out.row_bias != nullptr) {
        const float bias = out.row_bias[out.transposed ? j + r : i + r];  // the run is one row of C
        for (std::int64_t k = 0; k < length; ++k) v[k] += bias;
      }
      T* dst = out.transposed ? C + (j + r) * out.ldc + i : C + (i + r) * out.ldc + j;
      if constexpr (std::is_same_v<T, float>) {
        if (out.beta == 0.0f)
          for (std::int64_t k = 0; k < length; ++k) dst[k] = v[k];
        else
          for (std::int64_t k = 0; k < length; ++k) dst[k] = v[k] + out.beta * dst[k];
      } else {
        if (out.beta == 0.0f)
          for (std::int64_t k = 0; k < length; ++k) dst[k] = common::bf16_bits_from_float(v[k]);
        else
          for (std::int64_t k = 0; k < length; ++k)
            dst[k] = common::bf16_bits_from_float(v[k] + out.beta * common::float_from_bf16_bits(dst[k]));
      }
    }
  };
  if (out.type == DType::f32) store(static_cast<float*>(out.C));
  else store(static_cast<std::uint16_t*>(out.C));
}

}  // namespace

#if defined(__x86_64__)

namespace {

struct alignas(64) TileConfig {
  std::uint8_t palette_id = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

// Every tile is 16 rows of 64 bytes: C tiles 16 x 16 float32, A tiles 16 x 32 bfloat16, B tiles
// 16 pair-rows x 16 columns x 2 bfloat16.
ACCRUE_TARGET_AMX void configure_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
}

// One 32 x 32 block of C (four 16 x 16 tiles), or its 16-row or 16-column remainder, over all K.
template <bool TwoRows, bool TwoCols>
ACCRUE_TARGET_AMX void amx_block(const Bf16A& a, const Bf16B& b, std::int64_t i, std::int64_t j, float* acc,
                                 std::int64_t ldacc) {
  // acc points at the block's own corner.
  _tile_zero(0);
  if constexpr (TwoCols) _tile_zero(1);
  if constexpr (TwoRows) _tile_zero(2);
  if constexpr (TwoRows && TwoCols) _tile_zero(3);
  const std::uint16_t* a0 = a.data + i * a.Kp;
  const std::uint16_t* b0 = b.data + j * 2;
  const std::int64_t a_stride = a.Kp * 2, b_stride = b.Np * 4;
  for (std::int64_t k = 0; k < a.Kp; k += 32) {
    _tile_loadd(4, a0 + k, a_stride);
    if constexpr (TwoRows) _tile_loadd(5, a0 + 16 * a.Kp + k, a_stride);
    const std::uint16_t* bk = b0 + (k / 2) * b.Np * 2;
    _tile_loadd(6, bk, b_stride);
    if constexpr (TwoCols) _tile_loadd(7, bk + 32, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (TwoCols) _tile_dpbf16ps(1, 4, 7);
    if constexpr (TwoRows) _tile_dpbf16ps(2, 5, 6);
    if constexpr (TwoRows && TwoCols) _tile_dpbf16ps(3, 5, 7);
  }
  float* c = acc;
  _tile_stored(0, c, ldacc * 4);
  if constexpr (TwoCols) _tile_stored(1, c + 16, ldacc * 4);
  if constexpr (TwoRows) _tile_stored(2, c + 16 * ldacc, ldacc * 4);
  if constexpr (TwoRows && TwoCols) _tile_stored(3, c + 16 * ldacc + 16, ldacc * 4);
}

ACCRUE_TARGET_AMX void release_tiles() { _tile_release(); }

// Eight rows by Cols x 16 columns of C over all K with vdpbf16ps: each step along K takes one pair
// of A's row (broadcast to every lane) against a row of B's pairs, so the packed layouts serve as
// they are. Sixteen float32 accumulators stay in registers; B's 32 columns stream from L1.
template <int Cols>
ACCRUE_TARGET_AVX512_BF16 void dot_block(const Bf16A& a, const Bf16B& b, std::int64_t i, std::int64_t j, float* acc,
                                         std::int64_t ldacc) {
  // acc points at the strip's own corner.
  constexpr int rows = 8;
  __m512 c[rows][Cols];
  for (int r = 0; r < rows; ++r)
    for (int s = 0; s < Cols; ++s) c[r][s] = _mm512_setzero_ps();
  const auto* a0 = reinterpret_cast<const std::int32_t*>(a.data + i * a.Kp);
  const auto* b0 = reinterpret_cast<const std::int32_t*>(b.data) + j;
  const std::int64_t a_row = a.Kp / 2, pairs = a.Kp / 2;
  for (std::int64_t q = 0; q < pairs; ++q) {
    __m512bh bq[Cols];
    for (int s = 0; s < Cols; ++s) bq[s] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b0 + q * b.Np + 16 * s));
    for (int r = 0; r < rows; ++r) {
      const __m512bh ar = reinterpret_cast<__m512bh>(_mm512_set1_epi32(a0[r * a_row + q]));
      for (int s = 0; s < Cols; ++s) c[r][s] = _mm512_dpbf16_ps(c[r][s], ar, bq[s]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int s = 0; s < Cols; ++s) _mm512_storeu_ps(acc + r * ldacc + 16 * s, c[r][s]);
}

}  // namespace

namespace {

// Blocks [first, last) of 32 x 32 of C (col_blocks to a row of them), each written to C while in
// cache. The loops carry their kernel's instruction set, so that the products and write_block
// inline into them.
ACCRUE_TARGET_AMX void amx_blocks(const Bf16A& a, const Bf16B& b, const Bf16Output& out, std::int64_t first,
                                  std::int64_t last, std::int64_t col_blocks) {
  alignas(64) float acc[32 * 32];
  configure_tiles();  // tile state is per thread
  for (std::int64_t blk = first; blk < last; ++blk) {
    const std::int64_t i = (blk / col_blocks) * 32, j = (blk % col_blocks) * 32;
    const bool two_rows = i + 32 <= a.Mp, two_cols = j + 32 <= b.Np;
    if (two_rows && two_cols) amx_block<true, true>(a, b, i, j, acc, 32);
    else if (two_rows) amx_block<true, false>(a, b, i, j, acc, 32);
    else if (two_cols) amx_block<false, true>(a, b, i, j, acc, 32);
    else amx_block<false, false>(a, b, i, j, acc, 32);
    write_block(acc, i, j, std::min<std::int64_t>(32, a.M - i), std::min<std::int64_t>(32, b.N - j), out);
  }
  release_tiles();
}

ACCRUE_TARGET_AVX512_BF16 void dot_blocks(const Bf16A& a, const Bf16B& b, const Bf16Output& out, std::int64_t first,
                                          std::int64_t last, std::int64_t col_blocks) {
  alignas(64) float acc[32 * 32];
  for (std::int64_t blk = first; blk < last; ++blk) {
    const std::int64_t i = (blk / col_blocks) * 32, j = (blk % col_blocks) * 32;
    const bool two_cols = j + 32 <= b.Np;
    for (std::int64_t r = 0; r < 32 && i + r < a.Mp; r += 8) {
      if (two_cols) dot_block<2>(a, b, i + r, j, acc + r * 32, 32);
      else dot_block<1>(a, b, i + r, j, acc + r * 32, 32);
    }
    write_block(acc, i, j, std::min<std::int64_t>(32, a.M - i), std::min<std::int64_t>(32, b.N - j), out);
  }
}

}  // namespace

std::vector<Bf16Kernel> bf16_kernels_available() {
  std::vector<Bf16Kernel> k;
  if (capability() >= Capability::amx) k.push_back(Bf16Kernel::amx);
  if (capability() >= Capability::avx512_bf16) k.push_back(Bf16Kernel::avx512_bf16);
  return k;
}

void bf16_gemm(const Bf16A& a, const Bf16B& b, const Bf16Output& out, Bf16Kernel kernel) {
  ACCRUE_ASSERT(a.Kp == b.Kp && (kernel != Bf16Kernel::amx || a.Kp % 32 == 0));
  ACCRUE_ASSERT(kernel != Bf16Kernel::none);
  // Blocks of 32 x 32 of C: four AMX tiles, or four eight-row strips of two vectors.
  const std::int64_t row_blocks = (a.Mp + 31) / 32, col_blocks = (b.Np + 31) / 32;
  const std::int64_t blocks = row_blocks * col_blocks;
  const int tasks = a.M * b.N * a.K < (1 << 18) ? 1 : static_cast<int>(std::min<std::int64_t>(4 * num_threads(), blocks));
  parallel_tasks(tasks, [&](int t) {
    const std::int64_t first = blocks * t / tasks, last = blocks * (t + 1) / tasks;
    if (kernel == Bf16Kernel::amx) amx_blocks(a, b, out, first, last, col_blocks);
    else dot_blocks(a, b, out, first, last, col_blocks);
  });
}

#else

std::vector<Bf16Kernel> bf16_kernels_available() { return {}; }
void bf16_gemm(const Bf16A&, const Bf16B&, const Bf16Output&, Bf16Kernel) { ACCRUE_ASSERT(false); }

#endif

Bf16Kernel bf16_kernel() {
  if (capability() >= Capability::amx) return Bf16Kernel::amx;
  if (capability() >= Capability::avx512_bf16) return Bf16Kernel::avx512_bf16;
  return Bf16Kernel::none;
}

const char* bf16_kernel_name(Bf16Kernel kernel) {
  switch (kernel) {
    case Bf16Kernel::amx: return "AMX tiles";
    case Bf16Kernel::avx512_bf16: return "AVX-512 BF16";
    case Bf16Kernel::none: break;
  }
  return "none (widened to float32)";
}

}  // namespace accrue::kernels::cpu
