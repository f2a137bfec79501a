#include "attention.hpp"

#include <algorithm>

#include "gemm.hpp"
#include "parallel.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {
namespace {

// Each thread takes a contiguous run of heads; GEMMs called from inside a task run on that thread.
template <class F>
void for_each_head(const common::AttentionGeometry& g, F&& head) {
  const int threads = attention_threads(g);
  const std::int64_t n = g.heads_total();
  parallel_tasks(threads, [&](int t) {
    for (std::int64_t bh = n * t / threads; bh < n * (t + 1) / threads; ++bh) head(t, bh);
  });
}

// Head bh's probabilities (T_q, T_k) into p, before dropout.
void probabilities(const common::AttentionGeometry& g, std::int64_t bh, const float* q, const float* k,
                   const float* mask, const std::int32_t* padding, float* p) {
  const std::int64_t b = bh / g.heads, h = bh % g.heads;
  gemm(false, true, g.T_q, g.T_k, g.d, 1.0f, q + g.head_offset(b, h, g.T_q, g.d), g.ld(g.d),
       k + g.head_offset(b, h, g.T_k, g.d), g.ld(g.d), 0.0f, p, g.T_k);
  for (std::int64_t i = 0; i < g.T_q; ++i) common::attention_probabilities_row(g, bh, i, p + i * g.T_k, mask, padding);
}

// pd = p with head bh's dropout applied.
void drop(const common::AttentionGeometry& g, std::int64_t bh, const float* p, float* pd) {
  for (std::int64_t i = 0; i < g.T_q; ++i)
    for (std::int64_t j = 0; j < g.T_k; ++j)
      pd[i * g.T_k + j] = p[i * g.T_k + j] * common::attention_dropout_factor(g, bh, i, j);
}

}  // namespace

int attention_threads(const common::AttentionGeometry& g) {
  return static_cast<int>(std::clamp<std::int64_t>(g.heads_total(), 1, num_threads()));
}

void attention_forward(const common::AttentionGeometry& g, const float* q, const float* k, const float* v,
                       const float* mask, const std::int32_t* padding, float* out, float* scratch) {
  const std::int64_t S = g.scores_per_head();
  for_each_head(g, [&](int t, std::int64_t bh) {
    const std::int64_t b = bh / g.heads, h = bh % g.heads;
    float* p = scratch + t * S;
    probabilities(g, bh, q, k, mask, padding, p);
    if (g.dropout > 0.0f) drop(g, bh, p, p);
    gemm(false, false, g.T_q, g.d_v, g.T_k, 1.0f, p, g.T_k, v + g.head_offset(b, h, g.T_k, g.d_v), g.ld(g.d_v), 0.0f,
         out + g.head_offset(b, h, g.T_q, g.d_v), g.ld(g.d_v));
  });
}

void attention_backward(const common::AttentionGeometry& g, const float* q, const float* k, const float* v,
                        const float* mask, const std::int32_t* padding, const float* dout, float* dq, float* dk,
                        float* dv, bool accumulate_q, bool accumulate_k, bool accumulate_v, float* scratch) {
  const std::int64_t S = g.scores_per_head();
  const int buffers = g.dropout > 0.0f ? 3 : 2;
  for_each_head(g, [&](int t, std::int64_t bh) {
    const std::int64_t b = bh / g.heads, h = bh % g.heads;
    const std::int64_t oq = g.head_offset(b, h, g.T_q, g.d), ok = g.head_offset(b, h, g.T_k, g.d);
    const std::int64_t ov = g.head_offset(b, h, g.T_k, g.d_v), oo = g.head_offset(b, h, g.T_q, g.d_v);
    float* p = scratch + t * buffers * S;
    float* dp = p + S;
    float* pd = g.dropout > 0.0f ? dp + S : p;
    probabilities(g, bh, q, k, mask, padding, p);
    if (g.dropout > 0.0f) drop(g, bh, p, pd);
    // dV = P_dropped^T dO; dP_dropped = dO V^T, then through the dropout and the softmax (scaled).
    if (dv != nullptr)
      gemm(true, false, g.T_k, g.d_v, g.T_q, 1.0f, pd, g.T_k, dout + oo, g.ld(g.d_v), accumulate_v ? 1.0f : 0.0f,
           dv + ov, g.ld(g.d_v));
    if (dq == nullptr && dk == nullptr) return;
    gemm(false, true, g.T_q, g.T_k, g.d_v, 1.0f, dout + oo, g.ld(g.d_v), v + ov, g.ld(g.d_v), 0.0f, dp, g.T_k);
    for (std::int64_t i = 0; i < g.T_q; ++i) {
      float* row = dp + i * g.T_k;
      if (g.dropout > 0.0f)
        for (std::int64_t j = 0; j < g.T_k; ++j) row[j] *= common::attention_dropout_factor(g, bh, i, j);
      common::masked_softmax_row_backward(p + i * g.T_k, row, row, g.T_k, g.scale, false);
    }
    // dQ = dS K, dK = dS^T Q.
    if (dq != nullptr)
      gemm(false, false, g.T_q, g.d, g.T_k, 1.0f, dp, g.T_k, k + ok, g.ld(g.d), accumulate_q ? 1.0f : 0.0f, dq + oq,
           g.ld(g.d));
    if (dk != nullptr)
      gemm(true, false, g.T_k, g.d, g.T_q, 1.0f, dp, g.T_k, q + oq, g.ld(g.d), accumulate_k ? 1.0f : 0.0f, dk + ok,
           g.ld(g.d));
  });
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
