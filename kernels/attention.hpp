#pragma once
// Scaled dot-product attention, fused: softmax(scale Q K^T + mask) with the causal rule, key
// padding and dropout, times V, without keeping the probabilities. Backward recomputes each head's
// scores from Q and K (FlashAttention's trade: a GEMM more for no (T_q, T_k) matrix per head kept
// between forward and backward).

#include <cstddef>

#include "../framework/core/tensor.hpp"
#include "common/attention.hpp"

namespace accrue::kernels {

/// Attention's operands, float32, laid out as the geometry says. mask: additive (T_q, T_k) or
/// undefined; padding: int32 (batch, T_k), non-zero for a padded key, or undefined.
struct AttentionInputs {
  Tensor q, k, v, mask, padding;
};

/// out = attention(q, k, v) for every head.
void attention_forward(const AttentionInputs& in, const Tensor& out, const common::AttentionGeometry& g);

/// Where attention_backward writes: an undefined tensor is not computed; each one is added to when
/// its `accumulate` is set, overwritten otherwise.
struct AttentionGradients {
  Tensor dq, dk, dv;
  bool accumulate_q = false, accumulate_k = false, accumulate_v = false;
};
void attention_backward(const AttentionInputs& in, const Tensor& dout, const AttentionGradients& grads,
                        const common::AttentionGeometry& g);

/// Bytes of scores attention allocates for itself on `device`: on the CPU one head's (T_q, T_k)
/// matrices per thread in use (one in forward; two in backward, three with dropout); on a GPU those
/// of every head at once. For memory plans.
std::size_t attention_scratch_bytes(Device device, const common::AttentionGeometry& g, bool backward);

}  // namespace accrue::kernels
