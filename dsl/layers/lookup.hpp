#pragma once
// Keras's preprocessing layers for tables, so that a model takes a table's columns as they are
// written (numbers and words) and gives the same answer on any file with those columns, whatever
// their order and whatever categories it holds:
//
//   auto table = datasets::csv("weather.csv", {.target = "rain", .groups = {{"numbers", {"temperature", "humidity"}},
//                                                                            {"sky", {"sky"}, .text = true}}});
//   layers::StringLookup sky_words;
//   sky_words.adapt(table, "sky");                         // its vocabulary, from the training split
//   layers::Input numbers{{2}, {.name = "numbers"}}, sky{{1, 32}, {.name = "sky", .dtype = DType::i32}};
//   auto x = layers::Concatenate{}({norm(numbers), layers::CategoryEncoding{sky_words.vocabulary_size()}(sky_words(sky))});
//
// Text is a column's UTF-8 bytes as int32 (1 to 255), zeros after them: a sample of k text
// columns is (k, width) (datasets::csv's text groups). Indices are int32. A vocabulary is part
// of the layer's configuration, so a saved model keeps it; an ONNX export looks words up with
// Equal and ArgMax against it.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../datasets/dataset.hpp"
#include "../layer.hpp"

namespace accrue::layers {

struct StringLookupOptions {
  /// The words, index 1, 2, ... in this order (Keras's vocabulary=); empty until adapt().
  std::vector<std::string> vocabulary = {};
  /// adapt() keeps at most this many words, the most frequent (none: all).
  std::optional<std::int64_t> max_tokens = {};
  std::string name = {};
};

/// Each word as its index in the vocabulary: 1, 2, ... for the words, 0 for any other (Keras's
/// StringLookup with one out-of-vocabulary index and no mask). Input (k, width) text, output (k)
/// int32.
class StringLookup final : public LayerBase<StringLookup, "StringLookup"> {
 public:
  explicit StringLookup(StringLookupOptions options = {});
  LayerConfig config() const override;
  static StringLookup from_config(const ConfigReader& c);

  /// The vocabulary from every sample of `data`'s input `input` (its only one when empty): the
  /// words by how often they occur, the most frequent first (ties in byte order), as Keras adapts.
  void adapt(const Dataset& data, const std::string& input = {});
  /// The same from a batch of text (N, k, width) or (N, width).
  void adapt(const Tensor& text);
  const std::vector<std::string>& vocabulary() const { return vocabulary_; }
  /// Indices it gives: the words and the out-of-vocabulary index 0 (CategoryEncoding's num_tokens).
  std::int64_t vocabulary_size() const { return static_cast<std::int64_t>(vocabulary_.size()) + 1; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  void set_vocabulary(std::vector<std::string> vocabulary);
  std::vector<std::string> vocabulary_;
  // Each word's index, made with the vocabulary so that predict only reads it (threads share it).
  std::unordered_map<std::string, std::int32_t> index_;
  std::optional<std::int64_t> max_tokens_;
};

struct IntegerLookupOptions {
  std::vector<std::int64_t> vocabulary = {};
  std::optional<std::int64_t> max_tokens = {};
  std::string name = {};
};

/// Each whole number as its index in the vocabulary, 0 for any other (Keras's IntegerLookup with
/// one out-of-vocabulary index and no mask). Input (k) int32 or float32 whole numbers, output (k)
/// int32.
class IntegerLookup final : public LayerBase<IntegerLookup, "IntegerLookup"> {
 public:
  explicit IntegerLookup(IntegerLookupOptions options = {});
  LayerConfig config() const override;
  static IntegerLookup from_config(const ConfigReader& c);

  /// As StringLookup::adapt: by frequency, ties in increasing order.
  void adapt(const Dataset& data, const std::string& input = {});
  void adapt(const Tensor& values);
  const std::vector<std::int64_t>& vocabulary() const { return vocabulary_; }
  std::int64_t vocabulary_size() const { return static_cast<std::int64_t>(vocabulary_.size()) + 1; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  void set_vocabulary(std::vector<std::int64_t> vocabulary);
  std::vector<std::int64_t> vocabulary_;
  std::unordered_map<std::int64_t, std::int32_t> index_;  // as StringLookup's
  std::optional<std::int64_t> max_tokens_;
};

enum class Encoding { one_hot, multi_hot, count };

struct CategoryEncodingOptions {
  /// multi_hot (Keras's default): 1 where any of the sample's indices is; one_hot: the sample's one
  /// index (a sample of one entry); count: how many of its indices are each.
  Encoding output_mode = Encoding::multi_hot;
  std::string name = {};
};

/// Indices 0 to num_tokens - 1 as a float32 vector of num_tokens entries: Keras's
/// CategoryEncoding. Input (k) int32; an index outside the range is an error naming it.
class CategoryEncoding final : public LayerBase<CategoryEncoding, "CategoryEncoding"> {
 public:
  explicit CategoryEncoding(std::int64_t num_tokens, CategoryEncodingOptions options = {});
  LayerConfig config() const override;
  static CategoryEncoding from_config(const ConfigReader& c);

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::int64_t num_tokens_;
  CategoryEncodingOptions options_;
};

struct HashingOptions {
  std::string name = {};
};

/// Each word (text input) or whole number (int32 input) as one of num_bins indices, by a hash:
/// Keras's Hashing, for categories too many or too open to list. Accrue's hash (not Keras's
/// FarmHash): a text's bytes weighed by fixed pseudo-random weights and summed, a number times a
/// large odd constant, modulo num_bins; the same in an ONNX export. Output (k) int32.
class Hashing final : public LayerBase<Hashing, "Hashing"> {
 public:
  explicit Hashing(std::int64_t num_bins, HashingOptions options = {});
  LayerConfig config() const override;
  static Hashing from_config(const ConfigReader& c);

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::int64_t num_bins_;
  bool text_ = false;  // valid once built: the input is text (k, width)
};

}  // namespace accrue::layers
