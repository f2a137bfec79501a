#pragma once
// Token and position embeddings: what turns (batch, T) int32 tokens into (batch, T, dim) vectors
// for attention and recurrent layers.

#include "../layer.hpp"

namespace accrue::layers {

struct EmbeddingOptions {
  /// A token whose row stays zero and gets no gradient (padding); -1: none.
  std::int64_t padding_idx = -1;
  std::string name = {};
};

/// A table of `vocab` rows of `dim` values looked up by int32 tokens: samples (T...) of tokens give
/// (T..., dim), as nn.Embedding. The weight is (vocab, dim), standard normal as PyTorch draws it,
/// the padding row zero. A token outside [0, vocab) is an error naming its position.
class Embedding final : public LayerBase<Embedding> {
 public:
  Embedding(std::int64_t vocab, std::int64_t dim, EmbeddingOptions options = {});
  std::string type_name() const override { return "Embedding"; }
  LayerConfig config() const override;
  /// The layer config() describes (layer_registry.hpp).
  static Embedding from_config(const ConfigReader& c);
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& tokens) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

  std::int64_t vocab() const { return vocab_; }
  std::int64_t dim() const { return dim_; }
  const Tensor& weight() const { return named_parameters().at(0).second; }

 private:
  std::int64_t vocab_, dim_;
  EmbeddingOptions options_;
};

/// Learned positions: samples (T, dim) get row t of a (max_length, dim) table added at position t,
/// as GPT-2's position embedding (an nn.Embedding of positions, standard normal). Samples longer
/// than max_length are an error.
class PositionalEmbedding final : public LayerBase<PositionalEmbedding> {
 public:
  explicit PositionalEmbedding(std::int64_t max_length, std::string name = {});
  std::string type_name() const override { return "PositionalEmbedding"; }
  LayerConfig config() const override;
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::int64_t max_length_;
};

/// Fixed sinusoidal positions of "Attention Is All You Need": samples (T, dim) get
/// pe[t, 2i] = sin(t / 10000^(2i / dim)) and pe[t, 2i + 1] = cos(t / 10000^(2i / dim)) added. The
/// table is a buffer "pe" of max_length rows (saved with the weights, as PyTorch's tutorial
/// registers it); nothing is trained.
class SinusoidalEncoding final : public LayerBase<SinusoidalEncoding> {
 public:
  explicit SinusoidalEncoding(std::int64_t max_length, std::string name = {});
  std::string type_name() const override { return "SinusoidalEncoding"; }
  LayerConfig config() const override;
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::int64_t max_length_;
};

}  // namespace accrue::layers
