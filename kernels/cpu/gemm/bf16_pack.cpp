// The bfloat16 GEMM's loops over memory (bf16.cpp has the products): packing the operands,
// rounding through bfloat16. Compiled once per instruction-set variant
// (kernels/cpu/variant.hpp), since the compiler vectorises these loops.

#include "bf16_pack.hpp"

#include <algorithm>
#include <type_traits>

#include "../../../framework/core/half.hpp"
#include "../parallel.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {

namespace {

inline std::uint16_t to_bf16(float f) { return common::bf16_bits_from_float(f); }

// Sources are float32 (rounded to bfloat16 here, as autocast rounds its inputs) or bfloat16 bits.

template <class T>
std::uint16_t bits(T v) {
  if constexpr (std::is_same_v<T, float>) return to_bf16(v);
  else return v;
}

// Packing splits across the pool only in pieces of at least this many values: the packs of a
// micro-batch of 16 are a few thousand values, and handing those to another thread costs more
// than it saves. A batch of 64's activations and gradients (64 x 512, 64 x 784) split in two: the
// MLP's epoch at batch 64 with .amp() took 0.95x-0.96x the time it took with a grain twice this
// (bench/mlp_epoch, alternated in one process), and 16 x 4 the same.
constexpr std::int64_t pack_grain = 1 << 14;

// Units of `size` values each per piece of at least pack_grain values, and at least `least`.
std::int64_t grain_of(std::int64_t size, std::int64_t least) { return std::max(least, pack_grain / std::max<std::int64_t>(size, 1)); }

// out (Mp x Kp) = op(A) for A of element type T.
template <class T>
void pack_a(bool trans, std::int64_t M, std::int64_t K, const T* A, std::int64_t lda, Bf16A& p) {
  if (trans) {
    // A^T is stored K x M: sixteen rows of the pack at a time, through 16 x 16 tiles read a row of
    // A^T's storage at a time and written a row of the pack at a time (one value per row and
    // step of K would touch sixteen cache lines, 2 KiB apart or more, for every 32 bytes).
    parallel_for(p.Mp / 16, grain_of(16 * p.Kp, 1), [&](std::int64_t begin, std::int64_t end) {
      std::uint16_t tile[16][16];  // [k][i]
      for (std::int64_t blk = begin; blk < end; ++blk) {
        const std::int64_t i0 = blk * 16, n = std::clamp<std::int64_t>(M - i0, 0, 16);
        std::uint16_t* rows = p.data + i0 * p.Kp;
        for (std::int64_t k0 = 0; k0 < K; k0 += 16) {
          const std::int64_t kn = std::min<std::int64_t>(16, K - k0);
          for (std::int64_t kk = 0; kk < kn; ++kk) {
            const T* src = A + (k0 + kk) * lda + i0;
            if (n == 16)
              for (int r = 0; r < 16; ++r) tile[kk][r] = bits(src[r]);
            else
              for (std::int64_t r = 0; r < n; ++r) tile[kk][r] = bits(src[r]);
          }
          for (std::int64_t r = 0; r < n; ++r)
            for (std::int64_t kk = 0; kk < kn; ++kk) rows[r * p.Kp + k0 + kk] = tile[kk][r];
        }
        for (std::int64_t r = 0; r < 16; ++r)
          std::fill(rows + r * p.Kp + (r < n ? K : 0), rows + (r + 1) * p.Kp, std::uint16_t{0});
      }
    });
    return;
  }
  parallel_for(p.Mp, grain_of(p.Kp, 16), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      std::uint16_t* row = p.data + i * p.Kp;
      if (i >= M) {
        std::fill(row, row + p.Kp, std::uint16_t{0});
        continue;
      }
      for (std::int64_t k = 0; k < K; ++k) row[k] = bits(A[i * lda + k]);
      std::fill(row + K, row + p.Kp, std::uint16_t{0});
    }
  });
}

// out[q][n] = (b(2q, n), b(2q + 1, n)) as one 32-bit word, for B of element type T.
template <class T>
void pack_b(bool trans, std::int64_t K, std::int64_t N, const T* B, std::int64_t ldb, Bf16B& p) {
  auto* out = reinterpret_cast<std::uint32_t*>(p.data);
  const std::int64_t pairs = p.Kp / 2;
  if (!trans) {
    // Rows 2q and 2q + 1 of B interleave: both read in order, written in order.
    parallel_for(pairs, grain_of(2 * p.Np, 8), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t q = begin; q < end; ++q) {
        std::uint32_t* o = out + q * p.Np;
        const std::int64_t k = 2 * q;
        if (k + 1 < K) {
          const T* r0 = B + k * ldb;
          const T* r1 = r0 + ldb;
          for (std::int64_t n = 0; n < N; ++n) o[n] = Bf16B::pair(bits(r0[n]), bits(r1[n]));
        } else if (k < K) {
          const T* r0 = B + k * ldb;
          for (std::int64_t n = 0; n < N; ++n) o[n] = Bf16B::pair(bits(r0[n]), 0);
        } else {
          std::fill(o, o + N, 0u);
        }
        std::fill(o + N, o + p.Np, 0u);
      }
    });
    return;
  }
  // B^T is stored N x K: row n holds b(., n) in order, so pairs along K are adjacent. Sixteen rows at a
  // time write whole 64-byte lines of the output, which stay in cache across the K loop.
  parallel_for((p.Np + 15) / 16, grain_of(16 * p.Kp, 1), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t blk = begin; blk < end; ++blk) {
      for (std::int64_t n = blk * 16; n < blk * 16 + 16; ++n) {
        if (n >= N) {
          for (std::int64_t q = 0; q < pairs; ++q) out[q * p.Np + n] = 0u;
          continue;
        }
        const T* row = B + n * ldb;
        std::int64_t q = 0;
        for (; 2 * q + 1 < K; ++q) out[q * p.Np + n] = Bf16B::pair(bits(row[2 * q]), bits(row[2 * q + 1]));
        if (2 * q < K) {  // an odd K: the last pair's second half is padding
          out[q * p.Np + n] = Bf16B::pair(bits(row[2 * q]), 0);
          ++q;
        }
        for (; q < pairs; ++q) out[q * p.Np + n] = 0u;
      }
    }
  });
}

}  // namespace

void pack_bf16_rows(Bf16A& into, bool trans, const void* A, DType dtype, std::int64_t lda) {
  if (dtype == DType::f32) pack_a(trans, into.M, into.K, static_cast<const float*>(A), lda, into);
  else pack_a(trans, into.M, into.K, static_cast<const std::uint16_t*>(A), lda, into);
}

void pack_bf16_pairs(Bf16B& into, bool trans, const void* B, DType dtype, std::int64_t ldb) {
  if (dtype == DType::f32) pack_b(trans, into.K, into.N, static_cast<const float*>(B), ldb, into);
  else pack_b(trans, into.K, into.N, static_cast<const std::uint16_t*>(B), ldb, into);
}

void round_through_bf16(const float* in, float* out, std::int64_t n) {
  parallel_for(n, pack_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) out[i] = common::float_from_bf16_bits(to_bf16(in[i]));
  });
}


}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
