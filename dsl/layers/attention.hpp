#pragma once
// Multi-head self-attention and the pre-LayerNorm Transformer block built from it.

#include "../layer.hpp"

namespace accrue::layers {

struct MultiHeadAttentionOptions {
  /// Each position attends to itself and earlier ones only (a decoder, a language model).
  bool causal = false;
  /// Dropout on the attention probabilities in training.
  float dropout = 0.0f;
  /// Biases of the input and output projections.
  bool bias = true;
  std::string name = {};
};

/// Self-attention over samples (T, dim) with `heads` heads of dim / heads each, as
/// nn.MultiheadAttention(dim, heads, batch_first=True) called with the input as query, key and
/// value: parameters in_proj_weight (3 dim, dim), Xavier-uniform; in_proj_bias (3 dim), zero;
/// out_proj.weight (dim, dim), nn.Linear's uniform; out_proj.bias (dim), zero. The heads run in one
/// fused ops::scaled_dot_product_attention, which keeps no scores for backward.
class MultiHeadAttention final : public LayerBase<MultiHeadAttention, "MultiHeadAttention"> {
 public:
  MultiHeadAttention(std::int64_t heads, std::int64_t dim, MultiHeadAttentionOptions options = {});
  LayerConfig config() const override;
  /// The layer config() describes (layer_registry.hpp).
  static MultiHeadAttention from_config(const ConfigReader& c);
  std::int64_t heads() const { return heads_; }
  std::int64_t dim() const { return dim_; }
  const MultiHeadAttentionOptions& options() const { return options_; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  /// With padded keys: key_padding int32 (batch, T), non-zero at a padding position that no query
  /// attends to (nn.MultiheadAttention's key_padding_mask).
  Tensor forward(const Tensor& x, const Tensor& key_padding);
  /// In a graph, one input or two: the sequence and its key-padding mask, int32 samples (T,), as
  /// `MultiHeadAttention{4, 64}({x, padding})`; the ONNX file then takes the mask as an input.
  InputCount input_count() const override { return {1, 2}; }
  Shape build_inputs(const std::vector<Shape>& input_shapes, Generator& generator) override;
  Tensor forward_inputs(const std::vector<Tensor>& xs) override;
  std::string to_onnx_inputs(onnx::Graph& graph, const std::vector<std::string>& xs) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::int64_t heads_, dim_;
  MultiHeadAttentionOptions options_;
  std::size_t out_proj_ = 0;
};

struct TransformerBlockOptions {
  /// Width of the MLP's hidden layer; 4 x dim when 0.
  std::int64_t mlp_dim = 0;
  /// Dropout after the attention, inside the MLP and after it (nn.TransformerEncoderLayer's three).
  float dropout = 0.1f;
  /// Dropout on the attention probabilities.
  float attention_dropout = 0.0f;
  bool causal = false;
  float eps = 1e-5f;
  std::string name = {};
};

/// A pre-LayerNorm Transformer block over samples (T, dim):
///   x = x + dropout(self_attn(norm1(x)));  x = x + dropout(linear2(dropout(gelu(linear1(norm2(x))))))
/// as nn.TransformerEncoderLayer(dim, heads, dim_feedforward=mlp_dim, dropout, activation="gelu",
/// batch_first=True, norm_first=True), with the same parameter names (self_attn.*, linear1.*,
/// linear2.*, norm1.*, norm2.*). mlp_dim is 4 x dim unless given; PyTorch's dim_feedforward is
/// 2048 unless given, so pass it there.
class TransformerBlock final : public LayerBase<TransformerBlock, "TransformerBlock"> {
 public:
  TransformerBlock(std::int64_t heads, std::int64_t dim, TransformerBlockOptions options = {});
  LayerConfig config() const override;
  /// The layer config() describes (layer_registry.hpp).
  static TransformerBlock from_config(const ConfigReader& c);
  std::int64_t dim() const { return dim_; }
  const TransformerBlockOptions& options() const { return options_; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  /// With padded keys, as MultiHeadAttention's: the mask goes to self_attn.
  Tensor forward(const Tensor& x, const Tensor& key_padding);
  /// In a graph, one input or two: the sequence and its key-padding mask, as MultiHeadAttention.
  InputCount input_count() const override { return {1, 2}; }
  Shape build_inputs(const std::vector<Shape>& input_shapes, Generator& generator) override;
  Tensor forward_inputs(const std::vector<Tensor>& xs) override;
  std::string to_onnx_inputs(onnx::Graph& graph, const std::vector<std::string>& xs) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::int64_t dim_;  // the heads live in self_attn
  TransformerBlockOptions options_;
  enum Child : std::size_t { self_attn, linear1, linear2, norm1, norm2 };
};

}  // namespace accrue::layers
