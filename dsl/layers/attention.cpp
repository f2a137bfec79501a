#include "attention.hpp"
#include "../layer_registry.hpp"

#include <algorithm>
#include <cmath>

#include "activation.hpp"
#include "dense.hpp"
#include "layer_norm.hpp"
#include "../../framework/autograd/deferred_gradients.hpp"
#include "../../framework/ops/ops.hpp"
#include "../../kernels/attention.hpp"
#include "../../kernels/gemm.hpp"
#include "../onnx.hpp"

namespace accrue::layers {
namespace {

void expect_sequence(const Layer& layer, const Shape& input_shape, std::int64_t dim) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 2 && input_shape[1] == dim,
                     "{} of width {} takes samples (T, {}), got {}", layer.type_name(), dim, dim, input_shape);
}

// The sequence's sample shape of a graph's inputs, checking the key-padding mask's (T,) when given.
const Shape& sequence_of(const Layer& layer, const std::vector<Shape>& input_shapes) {
  const Shape& x = input_shapes.at(0);
  if (input_shapes.size() == 2)
    ACCRUE_CHECK_SHAPE(x.rank() >= 1 && input_shapes[1] == Shape{x[0]},
                       "{}: the key-padding mask has samples of shape {}, not (T,) for sequences of shape {}",
                       layer.describe(), input_shapes[1], x);
  return x;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t heads, std::int64_t dim, MultiHeadAttentionOptions options)
    : heads_(heads), dim_(dim), options_(std::move(options)) {
  ACCRUE_CHECK(heads > 0 && dim > 0 && dim % heads == 0,
               "MultiHeadAttention needs a width divisible by the number of heads, got width {} and {} heads", dim, heads);
  ACCRUE_CHECK(options_.dropout >= 0.0f && options_.dropout < 1.0f,
               "MultiHeadAttention: dropout must be in [0, 1), got {}", options_.dropout);
  if (!options_.name.empty()) set_name(options_.name);
  out_proj_ = add_child("out_proj", Dense{dim, {.bias = options_.bias}});
}

Shape MultiHeadAttention::build(const Shape& input_shape, Generator& generator) {
  expect_sequence(*this, input_shape, dim_);
  const TensorOptions param{.category = MemoryCategory::parameters};
  // Xavier uniform over the (3 dim, dim) matrix, as nn.MultiheadAttention's _reset_parameters.
  const float bound = std::sqrt(6.0f / static_cast<float>(3 * dim_ + dim_));
  add_parameter("in_proj_weight", Tensor::uniform({3 * dim_, dim_}, -bound, bound, &generator, param));
  if (options_.bias) add_parameter("in_proj_bias", Tensor::zeros({3 * dim_}, param));
  build_child(out_proj_, input_shape, generator);
  if (options_.bias) Tensor{child(out_proj_).named_parameters().at(1).second}.zero_();
  return input_shape;
}

Tensor MultiHeadAttention::forward(const Tensor& x) { return forward(x, Tensor()); }

Tensor MultiHeadAttention::forward(const Tensor& x, const Tensor& key_padding) {
  const std::int64_t B = x.size(0), T = x.size(1), d = dim_ / heads_;
  const Tensor qkv = ops::linear(x, named_parameters().at(0).second,
                                 options_.bias ? named_parameters().at(1).second : Tensor());
  const std::int64_t sizes[] = {dim_, dim_, dim_};
  const std::vector<Tensor> parts = ops::split(qkv, sizes, -1);
  const Shape heads{B, T, heads_, d};
  const Tensor o = ops::scaled_dot_product_attention(
      ops::reshape(parts[0], heads), ops::reshape(parts[1], heads), ops::reshape(parts[2], heads),
      {.causal = options_.causal, .key_padding = key_padding, .dropout = training() ? options_.dropout : 0.0f, .generator = &generator(),
       .token_major = true});
  return child(out_proj_).forward(ops::reshape(o, {B, T, dim_}));
}

// Kept for backward: the input (for in_proj_weight's gradient), q, k and v in float32 (attention's
// operands) and attention's output (out_proj's input). In forward the packed q, k, v projection is
// alive until it is split; attention's scores are scratch, one head per thread on the CPU.
LayerMemoryUse MultiHeadAttention::memory_use(const LayerMemoryQuery& q) const {
  const std::int64_t T = q.input_shape[0], rows = q.batch * T;
  const DType projected = q.autocast.value_or(DType::f32);
  const std::size_t width = static_cast<std::size_t>(rows * dim_);
  const kernels::common::AttentionGeometry g{.batch = q.batch, .heads = heads_, .T_q = T, .T_k = T,
                                            .d = dim_ / heads_, .d_v = dim_ / heads_,
                                            .dropout = options_.dropout};
  const LayerMemoryUse out = child(out_proj_).memory_use(
      {.input_shape = q.input_shape, .batch = q.batch, .input_dtype = DType::f32, .autocast = q.autocast,
       .device = q.device, .keeps_packs = q.keeps_packs});
  const std::size_t packed = 3 * width * dtype_size(projected);
  return {.output_dtype = out.output_dtype,
          .keeps_input = true,
          .keeps_output = false,
          .kept_other = 4 * width * 4 + out.kept_other,
          // q, k and v are kept (above); the packed projection they are split from is not.
          .forward_scratch = std::max({packed, kernels::attention_scratch_bytes(q.device, g, false), out.forward_scratch}),
          // The float32 gradients of q, k and v, then their packed copy for in_proj's backward (most of
          // them alive at once); under autocast also their conversions to the projection's type.
          .backward_scratch =
              3 * width * 4 + (projected == DType::f32 ? 2 : 6) * width * dtype_size(projected) +
              std::max(kernels::attention_scratch_bytes(q.device, g, true), out.scratch_with_input_gradient()),
          // in_proj reads its weight as a dim x 3 dim operand forward, 3 dim x dim back to the input.
          .kept_packs = out.kept_packs + out.kept_packs_for_input_gradient +
                        kernels::gemm_kept_parameter_bytes(q.device, projected, dim_, 3 * dim_),
          .kept_packs_for_input_gradient = kernels::gemm_kept_parameter_bytes(q.device, projected, 3 * dim_, dim_, true),
          .deferred_gradient_rows =
              out.deferred_gradient_rows +
              (projected == DType::f32 ? DeferredWeightGradients::buffer_bytes(q.device, rows, dim_, 3 * dim_) : 0)};
}

TransformerBlock::TransformerBlock(std::int64_t heads, std::int64_t dim, TransformerBlockOptions options)
    : dim_(dim), options_(std::move(options)) {
  ACCRUE_CHECK(options_.dropout >= 0.0f && options_.dropout < 1.0f,
               "TransformerBlock: dropout must be in [0, 1), got {}", options_.dropout);
  if (options_.mlp_dim == 0) options_.mlp_dim = 4 * dim;
  if (!options_.name.empty()) set_name(options_.name);
  // In nn.TransformerEncoderLayer's order, which is the order of the parameters.
  add_child("self_attn",
            MultiHeadAttention{heads, dim, {.causal = options_.causal, .dropout = options_.attention_dropout}});
  add_child("linear1", Dense{options_.mlp_dim});
  add_child("linear2", Dense{dim});
  add_child("norm1", LayerNorm{{.eps = options_.eps}});
  add_child("norm2", LayerNorm{{.eps = options_.eps}});
}

Shape TransformerBlock::build(const Shape& input_shape, Generator& generator) {
  expect_sequence(*this, input_shape, dim_);
  build_child(self_attn, input_shape, generator);
  const Shape hidden = build_child(linear1, input_shape, generator);
  build_child(linear2, hidden, generator);
  build_child(norm1, input_shape, generator);
  build_child(norm2, input_shape, generator);
  return input_shape;
}

Tensor TransformerBlock::forward(const Tensor& x) { return forward(x, Tensor()); }

Tensor TransformerBlock::forward(const Tensor& x, const Tensor& key_padding) {
  const float p = training() ? options_.dropout : 0.0f;
  Generator* gen = &generator();
  auto& attention = static_cast<MultiHeadAttention&>(child(self_attn));
  const Tensor attended = ops::dropout(attention.forward(child(norm1).forward(x), key_padding), p, true, gen);
  const Tensor x1 = ops::add(x, attended);
  const Tensor hidden = ops::dropout(ops::gelu(child(linear1).forward(child(norm2).forward(x1))), p, true, gen);
  return ops::add(x1, ops::dropout(child(linear2).forward(hidden), p, true, gen));
}

// The tensors between the sub-layers that backward needs: norm1's output (attention's input), the
// first residual sum (norm2's input), norm2's output (linear1's input), the hidden layer before
// and after GELU; plus what each sub-layer keeps itself.
LayerMemoryUse TransformerBlock::memory_use(const LayerMemoryQuery& q) const {
  const auto use = [&](std::size_t c, const Shape& shape, DType dtype) {
    return child(c).memory_use(
        {.input_shape = shape, .batch = q.batch, .input_dtype = dtype, .autocast = q.autocast, .device = q.device,
         .keeps_packs = q.keeps_packs});
  };
  const Shape hidden{q.input_shape[0], options_.mlp_dim};
  const LayerMemoryUse n1 = use(norm1, q.input_shape, q.input_dtype), att = use(self_attn, q.input_shape, n1.output_dtype);
  const LayerMemoryUse n2 = use(norm2, q.input_shape, DType::f32), l1 = use(linear1, q.input_shape, n2.output_dtype);
  const LayerMemoryUse l2 = use(linear2, hidden, l1.output_dtype);
  const std::size_t width = q.bytes(q.input_shape, DType::f32);
  // The hidden layer (kept before GELU and after it; its gradients are of its type too).
  const std::size_t hidden_kept = q.bytes(hidden, l1.output_dtype);
  // Kept from the MLP on: the residual sum, norm2's output, the hidden layer twice.
  const std::size_t kept_after_attention = q.bytes(q.input_shape, DType::f32) + q.bytes(q.input_shape, n2.output_dtype) +
                                           2 * hidden_kept + n2.kept_other + l1.kept_other + l2.kept_other;
  const std::size_t kept = n1.kept_other + att.kept_other + q.bytes(q.input_shape, n1.output_dtype) + kept_after_attention;
  // The plan counts all that is kept during the whole forward; what a phase allocates beyond the
  // tensors kept after it is its scratch: attention's, linear1's (its output becoming a kept
  // tensor), linear2's with the block's output.
  const auto beyond = [](std::size_t scratch, std::size_t later) { return scratch > later ? scratch - later : 0; };
  const std::size_t forward = std::max({beyond(att.forward_scratch + width, kept_after_attention),
                                        beyond(l1.forward_scratch, hidden_kept), l2.forward_scratch + width});
  return {.output_dtype = DType::f32,
          .keeps_input = n1.keeps_input,
          .keeps_output = false,
          .kept_other = kept,
          // linear2's input and what linear2 keeps go before the MLP's gradients peak.
          .kept_released_early = hidden_kept + l2.kept_other,
          .forward_scratch = forward,
          // The MLP's hidden gradients (before and after GELU), or attention's own, whichever is more.
          // The block's input gradient, which the plan counts beside this, appears only once the MLP's
          // are gone.
          .backward_scratch =
              std::max(2 * hidden_kept + std::max(l1.scratch_with_input_gradient(), l2.scratch_with_input_gradient()) -
                           width,
                       att.backward_scratch),
          // Every sub-layer's input is inside the block and needs its gradient (norm1 has parameters).
          .kept_packs = att.kept_packs + att.kept_packs_for_input_gradient + l1.kept_packs +
                        l1.kept_packs_for_input_gradient + l2.kept_packs + l2.kept_packs_for_input_gradient,
          .deferred_gradient_rows = att.deferred_gradient_rows + l1.deferred_gradient_rows + l2.deferred_gradient_rows};
}

LayerConfig MultiHeadAttention::config() const {
  return {{"heads", heads_},
          {"dim", dim_},
          {"causal", options_.causal},
          {"dropout", float_option(options_.dropout)},
          {"bias", options_.bias}};
}

MultiHeadAttention MultiHeadAttention::from_config(const ConfigReader& c) {
  return MultiHeadAttention{c.integer("heads"), c.integer("dim"),
                            {.causal = c.flag("causal"), .dropout = c.real("dropout"), .bias = c.flag("bias")}};
}

LayerConfig TransformerBlock::config() const {
  return {{"heads", static_cast<const MultiHeadAttention&>(child(self_attn)).heads()},
          {"dim", dim_},
          {"mlp_dim", options_.mlp_dim},
          {"dropout", float_option(options_.dropout)},
          {"attention_dropout", float_option(options_.attention_dropout)},
          {"causal", options_.causal},
          {"eps", float_option(options_.eps)}};
}

TransformerBlock TransformerBlock::from_config(const ConfigReader& c) {
  return TransformerBlock{c.integer("heads"), c.integer("dim"),
                          {.mlp_dim = c.integer("mlp_dim"),
                           .dropout = c.real("dropout"),
                           .attention_dropout = c.real("attention_dropout"),
                           .causal = c.flag("causal"),
                           .eps = c.real("eps")}};
}

Shape MultiHeadAttention::build_inputs(const std::vector<Shape>& input_shapes, Generator& generator) {
  return build(sequence_of(*this, input_shapes), generator);
}

Tensor MultiHeadAttention::forward_inputs(const std::vector<Tensor>& xs) {
  return xs.size() == 2 ? forward(xs[0], xs[1]) : forward(xs.at(0));
}

std::string MultiHeadAttention::to_onnx(onnx::Graph& g, const std::string& x) const { return to_onnx_inputs(g, {x}); }

// The projections as MatMuls, the heads by Reshape and Transpose, attention as MatMul, Softmax and
// MatMul, the causal mask added to the scores (-inf above the diagonal), as torch.onnx writes
// nn.MultiheadAttention; a key-padding mask, when the graph passes one, adds -inf to the scores of
// its padded keys.
std::string MultiHeadAttention::to_onnx_inputs(onnx::Graph& g, const std::vector<std::string>& xs) const {
  const std::string& x = xs.at(0);
  const std::int64_t T = input_shape()[0], d = dim_ / heads_;
  std::string qkv = g.node("MatMul", {x, g.weight_transposed("in_proj_weight", named_parameters().at(0).second)});
  if (options_.bias) qkv = g.node("Add", {qkv, g.weight("in_proj_bias", named_parameters().at(1).second)});
  const std::vector<std::string> parts = g.nodes("Split", {qkv, g.ints({dim_, dim_, dim_})}, 3, {{"axis", std::int64_t{-1}}});
  const auto heads = [&](const std::string& v, std::vector<std::int64_t> perm) {
    return g.node("Transpose", {g.node("Reshape", {v, g.ints({0, 0, heads_, d})})}, {{"perm", std::move(perm)}});
  };
  const std::string q = heads(parts[0], {0, 2, 1, 3}), k = heads(parts[1], {0, 2, 3, 1}), v = heads(parts[2], {0, 2, 1, 3});
  std::string scores = g.node("Mul", {g.node("MatMul", {q, k}), g.scalar(1.0f / std::sqrt(static_cast<float>(d)))});
  if (options_.causal) {
    std::vector<float> mask(static_cast<std::size_t>(T * T), 0.0f);
    for (std::int64_t i = 0; i < T; ++i)
      for (std::int64_t j = i + 1; j < T; ++j) mask[static_cast<std::size_t>(i * T + j)] = -INFINITY;
    scores = g.node("Add", {scores, g.weight("causal_mask", std::move(mask), {T, T})});
  }
  if (xs.size() == 2) {  // (batch, T) non-zero at padding -> -inf on (batch, 1, 1, T) of the scores
    const std::string padded = g.node("Cast", {xs[1]}, {{"to", std::int64_t{9}}});  // BOOL
    const std::string additive = g.node("Where", {padded, g.scalar(-INFINITY), g.scalar(0.0f)});
    scores = g.node("Add", {scores, g.node("Unsqueeze", {additive, g.ints({1, 2})})});
  }
  const std::string attended = g.node("MatMul", {g.node("Softmax", {scores}, {{"axis", std::int64_t{-1}}}), v});
  const std::string merged = g.node("Reshape", {g.node("Transpose", {attended}, {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}}),
                                                g.ints({0, 0, dim_})});
  return g.layer(child(out_proj_), merged);
}

Shape TransformerBlock::build_inputs(const std::vector<Shape>& input_shapes, Generator& generator) {
  return build(sequence_of(*this, input_shapes), generator);
}

Tensor TransformerBlock::forward_inputs(const std::vector<Tensor>& xs) {
  return xs.size() == 2 ? forward(xs[0], xs[1]) : forward(xs.at(0));
}

std::string TransformerBlock::to_onnx(onnx::Graph& g, const std::string& x) const { return to_onnx_inputs(g, {x}); }

// Pre-norm, as forward: x + attention(norm1(x)) (with the key-padding mask when given), then +
// linear2(GELU(linear1(norm2(.)))).
std::string TransformerBlock::to_onnx_inputs(onnx::Graph& g, const std::vector<std::string>& xs) const {
  const std::string& x = xs.at(0);
  std::vector<std::string> attention_inputs{g.layer(child(norm1), x)};
  if (xs.size() == 2) attention_inputs.push_back(xs[1]);
  const std::string x1 = g.node("Add", {x, g.layer(child(self_attn), attention_inputs)});
  const std::string hidden = gelu_to_onnx(g, g.layer(child(linear1), g.layer(child(norm2), x1)), false);
  return g.node("Add", {x1, g.layer(child(linear2), hidden)});
}

}  // namespace accrue::layers
