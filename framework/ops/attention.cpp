// Scaled dot-product attention as one op: its backward recomputes the probabilities (see
// kernels/attention.hpp), so a layer of attention keeps Q, K and V and no scores.

#include <cmath>

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../core/random.hpp"
#include "../../kernels/attention.hpp"

namespace accrue::ops {
namespace {

class AttentionNode final : public Node {
 public:
  AttentionNode(const kernels::AttentionInputs& in, const kernels::common::AttentionGeometry& g)
      : q_(in.q), k_(in.k), v_(in.v), mask_(in.mask), padding_(in.padding), geometry_(g) {}
  std::string_view name() const override { return "scaled_dot_product_attention"; }
  void backward(Tensor grad, GradSink& sink) override {
    kernels::AttentionGradients grads;
    if (sink.needs(0)) std::tie(grads.dq, grads.accumulate_q) = target(sink, 0);
    if (sink.needs(1)) std::tie(grads.dk, grads.accumulate_k) = target(sink, 1);
    if (sink.needs(2)) std::tie(grads.dv, grads.accumulate_v) = target(sink, 2);
    kernels::attention_backward({q_.get(name()), k_.get(name()), v_.get(name()), mask_, padding_}, float32(grad), grads,
                                geometry_);
  }
  void release() override {
    q_.reset();
    k_.reset();
    v_.reset();
  }

 private:
  static std::pair<Tensor, bool> target(GradSink& sink, std::size_t i) {
    auto [t, accumulate] = sink.target(i);
    return {t, accumulate};
  }
  SavedTensor q_, k_, v_;
  Tensor mask_, padding_;  // not differentiated
  kernels::common::AttentionGeometry geometry_;
};

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                    const AttentionOptions& options) {
  constexpr const char* op = "scaled_dot_product_attention";
  ACCRUE_CHECK(q_in.defined() && k_in.defined() && v_in.defined(), "{}: an operand is undefined", op);
  for (const Tensor* t : {&q_in, &k_in, &v_in})
    ACCRUE_CHECK(is_floating(t->dtype()), "{}: expects floating-point operands, got {}", op, dtype_name(t->dtype()));
  const Tensor q = float32(q_in), k = float32(k_in), v = float32(v_in);
  const char* layout = options.token_major ? "(batch, T, heads, d)" : "(batch, heads, T, d)";
  const int t_dim = options.token_major ? 1 : 2, h_dim = options.token_major ? 2 : 1;
  ACCRUE_CHECK_SHAPE(q.rank() == 4 && k.rank() == 4 && v.rank() == 4,
                     "{}: query, key and value must be {}, got {}, {} and {}", op, layout, q.shape(), k.shape(), v.shape());
  kernels::common::AttentionGeometry g{.batch = q.size(0), .heads = q.size(h_dim), .T_q = q.size(t_dim),
                                       .T_k = k.size(t_dim), .d = q.size(3), .d_v = v.size(3),
                                       .token_major = options.token_major};
  ACCRUE_CHECK_SHAPE(k.size(0) == g.batch && v.size(0) == g.batch && k.size(h_dim) == g.heads &&
                         v.size(h_dim) == g.heads && k.size(3) == g.d && v.size(t_dim) == g.T_k,
                     "{}: query {}, key {} and value {} do not fit together as {}: the same batch and heads, key and "
                     "value of one length, query and key of one width",
                     op, q.shape(), k.shape(), v.shape(), layout);
  ACCRUE_CHECK(q.device() == k.device() && q.device() == v.device(), "{}: operands on {}, {} and {}", op,
               q.device().str(), k.device().str(), v.device().str());
  if (options.mask.defined())
    ACCRUE_CHECK_SHAPE(options.mask.dtype() == DType::f32 && options.mask.rank() == 2 &&
                           options.mask.size(0) == g.T_q && options.mask.size(1) == g.T_k &&
                           options.mask.device() == q.device(),
                       "{}: the mask must be float32 (T_q, T_k) = ({}, {}) on {}, got {} {} on {}", op, g.T_q, g.T_k,
                       q.device().str(), dtype_name(options.mask.dtype()), options.mask.shape(),
                       options.mask.device().str());
  if (options.key_padding.defined())
    ACCRUE_CHECK_SHAPE(options.key_padding.dtype() == DType::i32 && options.key_padding.rank() == 2 &&
                           options.key_padding.size(0) == g.batch && options.key_padding.size(1) == g.T_k &&
                           options.key_padding.device() == q.device(),
                       "{}: key_padding must be int32 (batch, T_k) = ({}, {}) on {}, got {} {} on {}", op, g.batch,
                       g.T_k, q.device().str(), dtype_name(options.key_padding.dtype()), options.key_padding.shape(),
                       options.key_padding.device().str());
  ACCRUE_CHECK(options.dropout >= 0.0f && options.dropout < 1.0f, "{}: dropout must be in [0, 1), got {}", op,
               options.dropout);
  g.scale = options.scale.value_or(g.d > 0 ? 1.0f / std::sqrt(static_cast<float>(g.d)) : 1.0f);
  g.causal = options.causal;
  g.dropout = options.dropout;
  if (g.dropout > 0.0f) {
    Generator& gen = options.generator != nullptr ? *options.generator : default_generator();
    g.seed = gen.seed();
    g.offset = gen.reserve(static_cast<std::uint64_t>(g.heads_total() * g.scores_per_head()));
  }
  Shape out_shape = q.shape();
  out_shape[3] = g.d_v;
  Tensor out = Tensor::empty(out_shape, {.device = q.device()});
  const kernels::AttentionInputs in{q, k, v, options.mask, options.key_padding};
  kernels::attention_forward(in, out, g);
  if (needs_grad({&q, &k, &v})) record(std::make_shared<AttentionNode>(in, g), out, {&q, &k, &v});
  return out;
}

}  // namespace accrue::ops
