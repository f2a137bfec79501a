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
class Embedding final : public LayerBase<Embedding, "Embedding"> {
 public:
  Embedding(std::int64_t vocab, std::int64_t dim, EmbeddingOptions options = {});
  LayerConfig config() const override;
  /// The layer config() describes (layer_registry.hpp).
  static Embedding from_config(const ConfigReader& c);
  std::int64_t vocab() const { return vocab_; }
  std::int64_t dim() const { return dim_; }
  const Tensor& weight() const { return named_parameters().at(0).second; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& tokens) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::int64_t vocab_, dim_;
  EmbeddingOptions options_;
};

enum class PositionKind { learned, sinusoidal };

// Each kind's type name (literals of two lengths are two types, which ?: cannot choose between).
template <PositionKind Kind>
inline constexpr auto position_table_name = [] {
  if constexpr (Kind == PositionKind::learned) return LayerTypeName{"PositionalEmbedding"};
  else return LayerTypeName{"SinusoidalEncoding"};
}();

/// A table of max_length rows whose row t is added at position t of samples (T, dim); samples
/// longer than max_length are an error. Two tables, one layer.
template <PositionKind Kind>
class PositionTable final : public LayerBase<PositionTable<Kind>, position_table_name<Kind>> {
 public:
  explicit PositionTable(std::int64_t max_length, std::string name = {});
  LayerConfig config() const override;
  /// The table, sized for samples of `input_shape`.
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  // The type name, known before the object is (its constructor's error names it).
  static constexpr std::string_view type_ = position_table_name<Kind>.view();
  // What the table is saved and exported as: a parameter, or a buffer.
  static constexpr const char* table_name_ = Kind == PositionKind::learned ? "weight" : "pe";
  const Tensor& table() const;
  std::int64_t max_length_;
};
/// Learned positions, as GPT-2's position embedding: a parameter "weight" (max_length, dim) drawn
/// standard normal (an nn.Embedding of positions).
using PositionalEmbedding = PositionTable<PositionKind::learned>;
/// Fixed sinusoidal positions of "Attention Is All You Need":
/// pe[t, 2i] = sin(t / 10000^(2i / dim)) and pe[t, 2i + 1] = cos(t / 10000^(2i / dim)). The table
/// is a buffer "pe" (saved with the weights, as PyTorch's tutorial registers it); nothing is trained.
using SinusoidalEncoding = PositionTable<PositionKind::sinusoidal>;
extern template class PositionTable<PositionKind::learned>;
extern template class PositionTable<PositionKind::sinusoidal>;

}  // namespace accrue::layers
