#pragma once
// Where attention's operands lie and how one head's scores are masked and dropped, shared by the
// CPU body (one head's scores at a time per thread) and the CUDA body (all heads' scores at once).

#include <cstdint>

#include "dropout.hpp"
#include "../../framework/core/macros.hpp"
#include "softmax.hpp"

namespace accrue::kernels::common {

/// Sizes and layout of attention over `batch` x `heads` heads: queries (T_q, d), keys (T_k, d),
/// values (T_k, d_v), outputs (T_q, d_v) per head. Head-major tensors are (batch, heads, T, d) as
/// PyTorch's scaled_dot_product_attention takes them; token-major ones are (batch, T, heads, d), as
/// a projection's output (batch, T, heads x d) is without a permutation.
struct AttentionGeometry {
  std::int64_t batch = 0, heads = 0, T_q = 0, T_k = 0, d = 0, d_v = 0;
  bool token_major = false;
  float scale = 1.0f;
  bool causal = false;
  /// Attention dropout on the probabilities; seed and offset of its Philox stream.
  float dropout = 0.0f;
  std::uint64_t seed = 0, offset = 0;

  /// Elements between consecutive rows (positions) of one head's matrix of width w.
  ACCRUE_HD std::int64_t ld(std::int64_t w) const { return token_major ? heads * w : w; }
  /// Offset of head h of batch item b in a tensor of T rows of width w per head.
  ACCRUE_HD std::int64_t head_offset(std::int64_t b, std::int64_t h, std::int64_t T, std::int64_t w) const {
    return token_major ? (b * T * heads + h) * w : (b * heads + h) * T * w;
  }
  /// Elements between consecutive heads of one batch item (the stride of a batched GEMM).
  ACCRUE_HD std::int64_t head_stride(std::int64_t T, std::int64_t w) const { return token_major ? w : T * w; }
  std::int64_t heads_total() const { return batch * heads; }
  std::int64_t scores_per_head() const { return T_q * T_k; }
};

/// Softmax of row i of head bh's scores (in place, x = y), with the causal rule, an additive
/// (T_q, T_k) `mask` and (batch, T_k) key `padding` (either null), then attention dropout: the same
/// element index on every device, so forward and backward regenerate one mask.
ACCRUE_HD void attention_probabilities_row(const AttentionGeometry& g, std::int64_t bh, std::int64_t i, float* row,
                                           const float* mask, const std::int32_t* padding) {
  const std::int64_t b = bh / g.heads;
  masked_softmax_row(row, mask != nullptr ? mask + i * g.T_k : nullptr, row, g.T_k,
                     last_kept_entry(i, g.T_q, g.T_k, g.causal), g.scale,
                     padding != nullptr ? padding + b * g.T_k : nullptr);
}

/// The dropout factor of probability (bh, i, j): 1 without dropout.
ACCRUE_HD float attention_dropout_factor(const AttentionGeometry& g, std::int64_t bh, std::int64_t i, std::int64_t j) {
  if (g.dropout == 0.0f) return 1.0f;
  const std::uint64_t index = static_cast<std::uint64_t>((bh * g.T_q + i) * g.T_k + j);
  return dropout_factor(g.seed, g.offset, index, g.dropout, 1.0f / (1.0f - g.dropout));
}

}  // namespace accrue::kernels::common
