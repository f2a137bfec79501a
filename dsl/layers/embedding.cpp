#include "embedding.hpp"
#include "../layer_registry.hpp"

#include <cmath>
#include <vector>

#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

namespace accrue::layers {
Embedding::Embedding(std::int64_t vocab, std::int64_t dim, EmbeddingOptions options)
    : vocab_(vocab), dim_(dim), options_(std::move(options)) {
  ACCRUE_CHECK(vocab > 0 && dim > 0, "Embedding needs a positive vocabulary and width, got {} and {}", vocab, dim);
  ACCRUE_CHECK(options_.padding_idx >= -1 && options_.padding_idx < vocab,
               "Embedding: padding_idx {} is outside [0, {}) (or -1 for none)", options_.padding_idx, vocab);
  if (!options_.name.empty()) set_name(options_.name);
}

Shape Embedding::build(const Shape& input_shape, Generator& generator) {
  std::vector<float> w = Tensor::normal({vocab_, dim_}, 0.0f, 1.0f, &generator).to_vector();
  if (options_.padding_idx >= 0)
    std::fill_n(w.begin() + options_.padding_idx * dim_, dim_, 0.0f);
  add_parameter("weight", Tensor::from(w, {vocab_, dim_}, {.category = MemoryCategory::parameters}));
  Shape out = input_shape;
  out.push_back(dim_);
  return out;
}

Tensor Embedding::forward(const Tensor& tokens) {
  ACCRUE_CHECK(tokens.dtype() == DType::i32, "{} takes int32 tokens, got {} input of shape {}", describe(),
               dtype_name(tokens.dtype()), tokens.shape());
  return ops::embedding(weight(), tokens, options_.padding_idx);
}

// Keeps the tokens for the scatter of the gradient; the output is float32 under autocast too, as
// PyTorch's autocast leaves embeddings alone.
LayerMemoryUse Embedding::memory_use(const LayerMemoryQuery&) const {
  return {.output_dtype = DType::f32, .keeps_input = true, .keeps_output = false};
}

template <PositionKind Kind>
PositionTable<Kind>::PositionTable(std::int64_t max_length, std::string name) : max_length_(max_length) {
  ACCRUE_CHECK(max_length > 0, "{} needs a positive max_length, got {}", type_, max_length);
  if (!name.empty()) this->set_name(std::move(name));
}

template <PositionKind Kind>
Shape PositionTable<Kind>::build(const Shape& input_shape, Generator& generator) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 2, "{} adds positions to samples (T, dim), got {}; put an Embedding before it",
                     type_, input_shape);
  ACCRUE_CHECK_SHAPE(input_shape[0] <= max_length_, "{} holds {} positions, and samples have {}", type_,
                     max_length_, input_shape[0]);
  const std::int64_t dim = input_shape[1];
  if constexpr (Kind == PositionKind::learned) {
    this->add_parameter(table_name_, Tensor::normal({max_length_, dim}, 0.0f, 1.0f, &generator,
                                                    {.category = MemoryCategory::parameters}));
  } else {
    std::vector<float> pe(static_cast<std::size_t>(max_length_ * dim));
    for (std::int64_t t = 0; t < max_length_; ++t)
      for (std::int64_t i = 0; i < dim; ++i) {
        const double angle = static_cast<double>(t) / std::pow(10000.0, static_cast<double>(i - i % 2) / dim);
        pe[static_cast<std::size_t>(t * dim + i)] = static_cast<float>(i % 2 == 0 ? std::sin(angle) : std::cos(angle));
      }
    this->add_buffer(table_name_, Tensor::from(pe, {max_length_, dim}, {.category = MemoryCategory::parameters}));
  }
  return input_shape;
}

template <PositionKind Kind>
const Tensor& PositionTable<Kind>::table() const {
  return Kind == PositionKind::learned ? this->named_parameters().at(0).second : this->named_buffers().at(0).second;
}

template <PositionKind Kind>
Tensor PositionTable<Kind>::forward(const Tensor& x) {
  const std::int64_t T = x.size(1);
  return ops::add(x, T == table().size(0) ? table() : ops::slice(table(), 0, 0, T));
}

// Adding positions keeps nothing for backward: the gradient passes through (and sums over the
// batch for a learned table).
template <PositionKind Kind>
LayerMemoryUse PositionTable<Kind>::memory_use(const LayerMemoryQuery&) const {
  return {.output_dtype = DType::f32, .keeps_input = false, .keeps_output = false};
}

template <PositionKind Kind>
LayerConfig PositionTable<Kind>::config() const {
  return {{"max_length", max_length_}};
}

// The samples' length is fixed when the model is built: the table's first T rows, added.
template <PositionKind Kind>
std::string PositionTable<Kind>::to_onnx(onnx::Graph& g, const std::string& x) const {
  const std::int64_t T = this->input_shape()[0];
  return g.node("Add", {x, g.weight(table_name_, ops::slice(table(), 0, 0, T))});
}

template class PositionTable<PositionKind::learned>;
template class PositionTable<PositionKind::sinusoidal>;

LayerConfig Embedding::config() const {
  return {{"num_embeddings", vocab_}, {"embedding_dim", dim_}, {"padding_idx", options_.padding_idx}};
}

Embedding Embedding::from_config(const ConfigReader& c) {
  return Embedding{c.integer("num_embeddings"), c.integer("embedding_dim"), {.padding_idx = c.integer("padding_idx")}};
}

std::string Embedding::to_onnx(onnx::Graph& g, const std::string& x) const {
  return g.node("Gather", {g.weight("weight", weight()), x}, {{"axis", std::int64_t{0}}});
}

}  // namespace accrue::layers
