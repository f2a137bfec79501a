// Attention on the GPU: every head's scores at once in `scratch`, made and used by strided-batched
// cuBLAS GEMMs (one call per batch item over its heads), and one thread per row of scores for the
// softmax, masks and dropout of common/attention.hpp, the functions the CPU runs.

#include "attention.hpp"
#include "gemm.hpp"
#include "launch.cuh"

namespace accrue::kernels::cuda {
namespace {

// Row r = bh T_q + i of the scores: probabilities (and their dropped copy when `dropped` is set).
struct ProbabilityRows {
  common::AttentionGeometry g;
  float* scores;
  float* dropped;  // null: drop in place
  const float* mask;
  const std::int32_t* padding;
  __device__ void operator()(std::int64_t r) const {
    const std::int64_t bh = r / g.T_q, i = r % g.T_q;
    float* row = scores + r * g.T_k;
    common::attention_probabilities_row(g, bh, i, row, mask, padding);
    float* out = dropped != nullptr ? dropped + r * g.T_k : row;
    if (g.dropout > 0.0f)
      for (std::int64_t j = 0; j < g.T_k; ++j) out[j] = row[j] * common::attention_dropout_factor(g, bh, i, j);
  }
};

// The gradient of row r's scores from the gradient of its dropped probabilities, in place.
struct ScoreGradientRows {
  common::AttentionGeometry g;
  const float* p;
  float* dp;
  __device__ void operator()(std::int64_t r) const {
    const std::int64_t bh = r / g.T_q, i = r % g.T_q;
    float* row = dp + r * g.T_k;
    if (g.dropout > 0.0f)
      for (std::int64_t j = 0; j < g.T_k; ++j) row[j] *= common::attention_dropout_factor(g, bh, i, j);
    common::masked_softmax_row_backward(p + r * g.T_k, row, row, g.T_k, g.scale, false);
  }
};

// An operand of per_head_gemm: head slices of a tensor laid out as the geometry says, or `packed`
// (T_q, T_k) score matrices in scratch, one after another.
struct HeadOperand {
  const float* base;
  std::int64_t rows, width;
  bool packed;
};

// C_h = op(A_h) op(B_h) for every head h of every batch item.
void per_head_gemm(int device, const common::AttentionGeometry& g, bool ta, bool tb, std::int64_t M, std::int64_t N,
                   std::int64_t K, HeadOperand a, HeadOperand b, float beta, HeadOperand c) {
  const auto at = [&](const HeadOperand& o, std::int64_t item) {
    return o.packed ? o.base + item * g.heads * o.rows * o.width : o.base + g.head_offset(item, 0, o.rows, o.width);
  };
  const auto ld = [&](const HeadOperand& o) { return o.packed ? o.width : g.ld(o.width); };
  const auto stride = [&](const HeadOperand& o) { return o.packed ? o.rows * o.width : g.head_stride(o.rows, o.width); };
  for (std::int64_t item = 0; item < g.batch; ++item)
    gemm_f32_strided_batched(device, ta, tb, M, N, K, 1.0f, at(a, item), ld(a), stride(a), at(b, item), ld(b),
                             stride(b), beta, const_cast<float*>(at(c, item)), ld(c), stride(c), g.heads);
}

}  // namespace

void attention_forward(int device, const common::AttentionGeometry& g, const float* q, const float* k, const float* v,
                       const float* mask, const std::int32_t* padding, float* out, float* scratch) {
  const HeadOperand Q{q, g.T_q, g.d, false}, K{k, g.T_k, g.d, false}, V{v, g.T_k, g.d_v, false};
  const HeadOperand O{out, g.T_q, g.d_v, false}, P{scratch, g.T_q, g.T_k, true};
  per_head_gemm(device, g, false, true, g.T_q, g.T_k, g.d, Q, K, 0.0f, P);
  launch_elementwise(device, g.heads_total() * g.T_q, "attention_forward",
                     ProbabilityRows{g, scratch, nullptr, mask, padding});
  per_head_gemm(device, g, false, false, g.T_q, g.d_v, g.T_k, P, V, 0.0f, O);
}

void attention_backward(int device, const common::AttentionGeometry& g, const float* q, const float* k, const float* v,
                        const float* mask, const std::int32_t* padding, const float* dout, float* dq, float* dk,
                        float* dv, bool accumulate_q, bool accumulate_k, bool accumulate_v, float* scratch) {
  const std::int64_t all = g.heads_total() * g.scores_per_head();
  float* p = scratch;
  float* dp = scratch + all;
  float* pd = g.dropout > 0.0f ? dp + all : p;
  const HeadOperand Q{q, g.T_q, g.d, false}, K{k, g.T_k, g.d, false}, V{v, g.T_k, g.d_v, false};
  const HeadOperand dO{dout, g.T_q, g.d_v, false};
  const HeadOperand P{p, g.T_q, g.T_k, true}, PD{pd, g.T_q, g.T_k, true}, dP{dp, g.T_q, g.T_k, true};
  per_head_gemm(device, g, false, true, g.T_q, g.T_k, g.d, Q, K, 0.0f, P);
  launch_elementwise(device, g.heads_total() * g.T_q, "attention_backward",
                     ProbabilityRows{g, p, g.dropout > 0.0f ? pd : nullptr, mask, padding});
  if (dv != nullptr)
    per_head_gemm(device, g, true, false, g.T_k, g.d_v, g.T_q, PD, dO, accumulate_v ? 1.0f : 0.0f,
                  {dv, g.T_k, g.d_v, false});
  if (dq == nullptr && dk == nullptr) return;
  per_head_gemm(device, g, false, true, g.T_q, g.T_k, g.d_v, dO, V, 0.0f, dP);
  launch_elementwise(device, g.heads_total() * g.T_q, "attention_backward", ScoreGradientRows{g, p, dp});
  if (dq != nullptr)
    per_head_gemm(device, g, false, false, g.T_q, g.d, g.T_k, dP, K, accumulate_q ? 1.0f : 0.0f, {dq, g.T_q, g.d, false});
  if (dk != nullptr)
    per_head_gemm(device, g, true, false, g.T_k, g.d, g.T_q, dP, Q, accumulate_k ? 1.0f : 0.0f, {dk, g.T_k, g.d, false});
}

}  // namespace accrue::kernels::cuda
