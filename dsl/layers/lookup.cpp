#include "lookup.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>

#include "../../framework/core/error.hpp"
#include "../../framework/core/utf8.hpp"
#include "../../framework/ops/ops.hpp"
#include "../layer_registry.hpp"
#include "../onnx.hpp"

namespace accrue::layers {
namespace {

// Each word's (number's) index, from 1 in the vocabulary's order; a value given twice is refused,
// named as `shown` writes it.
template <class T, class Show>
std::unordered_map<T, std::int32_t> vocabulary_index(const std::vector<T>& vocabulary, const char* layer, Show shown) {
  std::unordered_map<T, std::int32_t> index;
  for (std::size_t i = 0; i < vocabulary.size(); ++i)
    ACCRUE_CHECK(index.emplace(vocabulary[i], static_cast<std::int32_t>(i + 1)).second,
                 "{}: the vocabulary holds {} twice", layer, shown(vocabulary[i]));
  return index;
}

constexpr std::int64_t onnx_float = 1, onnx_int32 = 6, onnx_int64 = 7;  // TensorProto data types

// The text of row `r` of `width` byte values: up to its first 0. A value that is no byte is an
// error naming `layer`.
std::string word_at(const std::int32_t* row, std::int64_t width, const Layer& layer) {
  std::string word;
  for (std::int64_t j = 0; j < width && row[j] != 0; ++j) {
    ACCRUE_CHECK(row[j] > 0 && row[j] < 256, "{}: text holds {}, not a byte (text is UTF-8 bytes 1 to 255, 0 after them)",
                 layer.describe(), row[j]);
    word.push_back(static_cast<char>(row[j]));
  }
  return word;
}

std::vector<std::int32_t> ints_of(const Tensor& x, const Layer& layer) {
  const Tensor cpu = x.to(Device::cpu());
  if (cpu.dtype() == DType::i32) return cpu.to_vector<std::int32_t>();
  std::vector<std::int32_t> out;
  for (const float v : ops::cast(cpu, DType::f32).to_vector<float>()) {
    ACCRUE_CHECK(v == std::trunc(v) && std::abs(v) <= 2147483647.0f, "{}: {} is not a whole number", layer.describe(), v);
    out.push_back(static_cast<std::int32_t>(v));
  }
  return out;
}

// The entries of `counts`, the most frequent first (ties in their own order), at most `max`.
template <class T>
std::vector<T> by_frequency(const std::map<T, std::int64_t>& counts, std::optional<std::int64_t> max) {
  std::vector<std::pair<T, std::int64_t>> all(counts.begin(), counts.end());
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (max && static_cast<std::int64_t>(all.size()) > *max) all.resize(static_cast<std::size_t>(*max));
  std::vector<T> out;
  for (auto& [value, n] : all) out.push_back(value);
  return out;
}

// The one input of `data` named `input` (its only one when empty), read batch by batch into f.
void each_batch_of(const Dataset& data, const std::string& input, const std::string& layer,
                   const std::function<void(const Tensor&)>& f) {
  const SampleLayout layout = data.layout();
  std::size_t index = 0;
  if (!input.empty()) {
    const auto at = std::find(layout.input_names.begin(), layout.input_names.end(), input);
    ACCRUE_CHECK(at != layout.input_names.end(), "{}.adapt: dataset '{}' has no input '{}'", layer, data.name(), input);
    index = static_cast<std::size_t>(at - layout.input_names.begin());
  } else {
    ACCRUE_CHECK(layout.inputs.size() == 1, "{}.adapt: dataset '{}' has {} inputs; name the one to adapt to", layer,
                 data.name(), layout.inputs.size());
  }
  ACCRUE_CHECK(data.size() > 0, "{}.adapt: dataset '{}' is empty", layer, data.name());
  for (std::int64_t begin = 0; begin < data.size(); begin += 1024)
    f(data.slice(begin, std::min(data.size(), begin + 1024)).inputs.at(index));
}

// The index of each entry among `vocabulary`'s entries, in ONNX: (N, k, V) matches of `x` against
// them, their ArgMax + 1 where one matches, else 0; int32.
std::string lookup_onnx(onnx::Graph& g, const std::string& matches) {
  const std::string found = g.node("ReduceMax", {matches}, {{"axes", std::vector<std::int64_t>{2}}, {"keepdims", std::int64_t{0}}});
  const std::string at = g.node("ArgMax", {matches}, {{"axis", std::int64_t{2}}, {"keepdims", std::int64_t{0}}});
  const std::string index = g.node("Add", {at, g.ints({1})});
  return g.node("Cast", {g.node("Where", {g.node("Greater", {found, g.scalar(0.5f)}), index, g.ints({0})})}, {{"to", onnx_int32}});
}

// Nothing kept: no gradient passes a lookup.
LayerMemoryUse index_memory(DType output) { return {.output_dtype = output, .keeps_input = false, .keeps_output = false}; }

}  // namespace

// ---- StringLookup ----------------------------------------------------------------------------

StringLookup::StringLookup(StringLookupOptions options) : max_tokens_(options.max_tokens) {
  set_name(options.name);
  ACCRUE_CHECK(!max_tokens_ || *max_tokens_ >= 1, "StringLookup: max_tokens {} is not at least 1", *max_tokens_);
  set_vocabulary(std::move(options.vocabulary));
}

// A word given twice would have two indices: refused, found as the index is made.
void StringLookup::set_vocabulary(std::vector<std::string> vocabulary) {
  index_ = vocabulary_index(vocabulary, "StringLookup", [](const std::string& w) { return printable_name(w); });
  vocabulary_ = std::move(vocabulary);
}

LayerConfig StringLookup::config() const {
  return {{"vocabulary", vocabulary_}, {"max_tokens", max_tokens_ ? ConfigValue{*max_tokens_} : ConfigValue{}}};
}

StringLookup StringLookup::from_config(const ConfigReader& c) {
  std::optional<std::int64_t> max;
  if (c.is_set("max_tokens")) max = c.integer("max_tokens");
  return StringLookup{{.vocabulary = c.texts("vocabulary"), .max_tokens = max}};
}

namespace {

// Adds each word of `text` (N, k, width) or (N, width) to `counts`.
void count_words(const Tensor& text, std::map<std::string, std::int64_t>& counts, const Layer& layer) {
  ACCRUE_CHECK_SHAPE(text.rank() >= 2 && text.dtype() == DType::i32,
                     "StringLookup.adapt: needs text (N, k, width) or (N, width) in int32, got {} {}", dtype_name(text.dtype()),
                     text.shape());
  const std::int64_t width = text.size(text.rank() - 1);
  const std::vector<std::int32_t> v = text.to(Device::cpu()).to_vector<std::int32_t>();
  for (std::size_t at = 0; at < v.size(); at += static_cast<std::size_t>(width)) ++counts[word_at(&v[at], width, layer)];
}

}  // namespace

void StringLookup::adapt(const Tensor& text) {
  std::map<std::string, std::int64_t> counts;
  count_words(text, counts, *this);
  set_vocabulary(by_frequency(counts, max_tokens_));
}

void StringLookup::adapt(const Dataset& data, const std::string& input) {
  std::map<std::string, std::int64_t> counts;
  each_batch_of(data, input, "StringLookup", [&](const Tensor& text) { count_words(text, counts, *this); });
  set_vocabulary(by_frequency(counts, max_tokens_));
}

Shape StringLookup::build(const Shape& input_shape, Generator&) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 1 || input_shape.rank() == 2,
                     "{} takes text (k columns, width bytes) or (width), not samples of shape {}", describe(), input_shape);
  return input_shape.rank() == 2 ? Shape{input_shape[0]} : Shape{1};
}

Tensor StringLookup::forward(const Tensor& x) {
  ACCRUE_CHECK(x.dtype() == DType::i32, "{} takes text as int32 bytes, not {}", describe(), dtype_name(x.dtype()));
  const std::int64_t width = x.size(x.rank() - 1);
  const std::vector<std::int32_t> v = x.to(Device::cpu()).to_vector<std::int32_t>();
  std::vector<std::int32_t> out;
  for (std::size_t at = 0; at < v.size(); at += static_cast<std::size_t>(width)) {
    const auto found = index_.find(word_at(&v[at], width, *this));
    out.push_back(found == index_.end() ? 0 : found->second);
  }
  return Tensor::from(out, output_shape().prepend(x.size(0)), {.dtype = DType::i32}).to(x.device());
}

// Each text row against every word as bytes (a word longer than the rows can never match).
std::string StringLookup::to_onnx(onnx::Graph& g, const std::string& x) const {
  const std::int64_t width = input_shape()[input_shape().rank() - 1];
  const auto words = static_cast<std::int64_t>(std::max<std::size_t>(vocabulary_.size(), 1));
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(words * width), -1);
  for (std::size_t i = 0; i < vocabulary_.size(); ++i) {
    if (static_cast<std::int64_t>(vocabulary_[i].size()) > width) continue;
    for (std::int64_t j = 0; j < width; ++j)
      bytes[i * static_cast<std::size_t>(width) + static_cast<std::size_t>(j)] =
          j < static_cast<std::int64_t>(vocabulary_[i].size()) ? static_cast<unsigned char>(vocabulary_[i][static_cast<std::size_t>(j)]) : 0;
  }
  const std::string rows = g.node("Reshape", {g.node("Cast", {x}, {{"to", onnx_int64}}), g.ints({0, -1, 1, width})});
  const std::string vocabulary = g.node("Reshape", {g.ints(bytes), g.ints({words, width})});
  const std::string same = g.node("Cast", {g.node("Equal", {rows, vocabulary})}, {{"to", onnx_float}});
  return lookup_onnx(g, g.node("ReduceMin", {same}, {{"axes", std::vector<std::int64_t>{3}}, {"keepdims", std::int64_t{0}}}));
}

LayerMemoryUse StringLookup::memory_use(const LayerMemoryQuery&) const { return index_memory(DType::i32); }

// ---- IntegerLookup ---------------------------------------------------------------------------

IntegerLookup::IntegerLookup(IntegerLookupOptions options) : max_tokens_(options.max_tokens) {
  set_name(options.name);
  ACCRUE_CHECK(!max_tokens_ || *max_tokens_ >= 1, "IntegerLookup: max_tokens {} is not at least 1", *max_tokens_);
  set_vocabulary(std::move(options.vocabulary));
}

void IntegerLookup::set_vocabulary(std::vector<std::int64_t> vocabulary) {
  index_ = vocabulary_index(vocabulary, "IntegerLookup", [](std::int64_t v) { return std::to_string(v); });
  vocabulary_ = std::move(vocabulary);
}

LayerConfig IntegerLookup::config() const {
  return {{"vocabulary", vocabulary_}, {"max_tokens", max_tokens_ ? ConfigValue{*max_tokens_} : ConfigValue{}}};
}

IntegerLookup IntegerLookup::from_config(const ConfigReader& c) {
  std::optional<std::int64_t> max;
  if (c.is_set("max_tokens")) max = c.integer("max_tokens");
  return IntegerLookup{{.vocabulary = c.integers("vocabulary"), .max_tokens = max}};
}

void IntegerLookup::adapt(const Tensor& values) {
  std::map<std::int64_t, std::int64_t> counts;
  for (const std::int32_t v : ints_of(values, *this)) ++counts[v];
  set_vocabulary(by_frequency(counts, max_tokens_));
}

void IntegerLookup::adapt(const Dataset& data, const std::string& input) {
  std::map<std::int64_t, std::int64_t> counts;
  each_batch_of(data, input, "IntegerLookup", [&](const Tensor& values) {
    for (const std::int32_t v : ints_of(values, *this)) ++counts[v];
  });
  set_vocabulary(by_frequency(counts, max_tokens_));
}

Shape IntegerLookup::build(const Shape& input_shape, Generator&) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 1, "{} takes (k) numbers, not samples of shape {}", describe(), input_shape);
  return input_shape;
}

Tensor IntegerLookup::forward(const Tensor& x) {
  std::vector<std::int32_t> out;
  for (const std::int32_t v : ints_of(x, *this)) {
    const auto found = index_.find(v);
    out.push_back(found == index_.end() ? 0 : found->second);
  }
  return Tensor::from(out, x.shape(), {.dtype = DType::i32}).to(x.device());
}

std::string IntegerLookup::to_onnx(onnx::Graph& g, const std::string& x) const {
  std::vector<std::int64_t> values = vocabulary_;
  if (values.empty()) values.push_back(std::int64_t{1} << 40);  // matches no int32
  const std::string numbers = g.node("Unsqueeze", {g.node("Cast", {x}, {{"to", onnx_int64}}), g.ints({2})});
  return lookup_onnx(g, g.node("Cast", {g.node("Equal", {numbers, g.ints(values)})}, {{"to", onnx_float}}));
}

LayerMemoryUse IntegerLookup::memory_use(const LayerMemoryQuery&) const { return index_memory(DType::i32); }

// ---- CategoryEncoding ------------------------------------------------------------------------

namespace {

const char* encoding_name(Encoding e) {
  switch (e) {
    case Encoding::one_hot: return "one_hot";
    case Encoding::multi_hot: return "multi_hot";
    case Encoding::count: return "count";
  }
  return "multi_hot";
}

}  // namespace

CategoryEncoding::CategoryEncoding(std::int64_t num_tokens, CategoryEncodingOptions options)
    : num_tokens_(num_tokens), options_(std::move(options)) {
  set_name(options_.name);
  ACCRUE_CHECK(num_tokens >= 1 && num_tokens <= (std::int64_t{1} << 24), "CategoryEncoding{{{}}}: num_tokens must be 1 to 2^24",
               num_tokens);
}

LayerConfig CategoryEncoding::config() const {
  return {{"num_tokens", num_tokens_}, {"output_mode", std::string(encoding_name(options_.output_mode))}};
}

CategoryEncoding CategoryEncoding::from_config(const ConfigReader& c) {
  const std::string mode = c.text("output_mode");
  for (const Encoding e : {Encoding::one_hot, Encoding::multi_hot, Encoding::count})
    if (mode == encoding_name(e)) return CategoryEncoding{c.integer("num_tokens"), {.output_mode = e}};
  throw ValueError(fmt::format("CategoryEncoding: output_mode '{}' is none of one_hot, multi_hot, count", mode));
}

Shape CategoryEncoding::build(const Shape& input_shape, Generator&) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 1, "{} takes (k) indices, not samples of shape {}", describe(), input_shape);
  ACCRUE_CHECK_SHAPE(options_.output_mode != Encoding::one_hot || input_shape[0] == 1,
                     "{}: one_hot takes one index per sample, not {} (multi_hot or count take several)", describe(),
                     input_shape[0]);
  return {num_tokens_};
}

Tensor CategoryEncoding::forward(const Tensor& x) {
  const std::vector<std::int32_t> indices = ints_of(x, *this);
  const std::int64_t n = x.size(0), k = x.numel() / std::max<std::int64_t>(n, 1);
  std::vector<float> out(static_cast<std::size_t>(n * num_tokens_), 0.0f);
  for (std::int64_t s = 0; s < n; ++s)
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int32_t t = indices[static_cast<std::size_t>(s * k + j)];
      ACCRUE_CHECK(t >= 0 && t < num_tokens_, "{}: sample {} holds index {}, outside 0 to {}", describe(), s, t, num_tokens_ - 1);
      float& slot = out[static_cast<std::size_t>(s * num_tokens_ + t)];
      slot = options_.output_mode == Encoding::count ? slot + 1.0f : 1.0f;
    }
  return Tensor::from(out, Shape{n, num_tokens_}).to(x.device());
}

std::string CategoryEncoding::to_onnx(onnx::Graph& g, const std::string& x) const {
  const std::string hot = g.node("OneHot", {g.node("Cast", {x}, {{"to", onnx_int64}}), g.ints({num_tokens_}),
                                            g.weight("off_on", {0.0f, 1.0f}, {2})});
  const bool sum = options_.output_mode == Encoding::count;
  return g.node(sum ? "ReduceSum" : "ReduceMax", sum ? std::vector<std::string>{hot, g.ints({1})} : std::vector<std::string>{hot},
                sum ? onnx::Attributes{{"keepdims", std::int64_t{0}}}
                    : onnx::Attributes{{"axes", std::vector<std::int64_t>{1}}, {"keepdims", std::int64_t{0}}});
}

LayerMemoryUse CategoryEncoding::memory_use(const LayerMemoryQuery&) const { return index_memory(DType::f32); }

// ---- Hashing ---------------------------------------------------------------------------------

namespace {

constexpr std::int64_t number_multiplier = 2654435761;  // odd, below 2^32: |v| < 2^31 keeps the product in int64

// Byte j's weight in a text's hash: fixed, pseudo-random, below 2^23 (a sum over 4096 bytes stays in int64).
std::int64_t byte_weight(std::int64_t j) {
  std::uint64_t z = static_cast<std::uint64_t>(j) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::int64_t>((z ^ (z >> 31)) & 0x7FFFFF) + 1;
}

std::int32_t bin_of(std::int64_t h, std::int64_t bins) { return static_cast<std::int32_t>(((h % bins) + bins) % bins); }

}  // namespace

Hashing::Hashing(std::int64_t num_bins, HashingOptions options) : num_bins_(num_bins) {
  set_name(options.name);
  ACCRUE_CHECK(num_bins >= 1 && num_bins <= (std::int64_t{1} << 24), "Hashing{{{}}}: num_bins must be 1 to 2^24", num_bins);
}

LayerConfig Hashing::config() const { return {{"num_bins", num_bins_}}; }

Hashing Hashing::from_config(const ConfigReader& c) { return Hashing{c.integer("num_bins")}; }

Shape Hashing::build(const Shape& input_shape, Generator&) {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 1 || input_shape.rank() == 2,
                     "{} takes (k) numbers or (k, width) text, not samples of shape {}", describe(), input_shape);
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 1 || input_shape[1] <= 4096, "{}: text of {} bytes, more than 4096", describe(),
                     input_shape[1]);
  text_ = input_shape.rank() == 2;
  return Shape{input_shape[0]};
}

Tensor Hashing::forward(const Tensor& x) {
  std::vector<std::int32_t> out;
  if (text_) {
    ACCRUE_CHECK(x.dtype() == DType::i32, "{} takes text as int32 bytes, not {}", describe(), dtype_name(x.dtype()));
    const std::int64_t width = x.size(x.rank() - 1);
    const std::vector<std::int32_t> v = x.to(Device::cpu()).to_vector<std::int32_t>();
    for (std::size_t at = 0; at < v.size(); at += static_cast<std::size_t>(width)) {
      const std::string word = word_at(&v[at], width, *this);
      std::int64_t h = 0;
      for (std::size_t j = 0; j < word.size(); ++j)
        h += static_cast<unsigned char>(word[j]) * byte_weight(static_cast<std::int64_t>(j));
      out.push_back(bin_of(h, num_bins_));
    }
  } else {
    for (const std::int32_t v : ints_of(x, *this)) out.push_back(bin_of(std::int64_t{v} * number_multiplier, num_bins_));
  }
  return Tensor::from(out, output_shape().prepend(x.size(0)), {.dtype = DType::i32}).to(x.device());
}

std::string Hashing::to_onnx(onnx::Graph& g, const std::string& x) const {
  std::string h;
  const std::string values = g.node("Cast", {x}, {{"to", onnx_int64}});
  if (text_) {
    std::vector<std::int64_t> weights;
    for (std::int64_t j = 0; j < input_shape()[1]; ++j) weights.push_back(byte_weight(j));
    h = g.node("ReduceSum", {g.node("Mul", {values, g.ints(weights)}), g.ints({2})}, {{"keepdims", std::int64_t{0}}});
  } else {
    h = g.node("Mul", {values, g.ints({number_multiplier})});
  }
  return g.node("Cast", {g.node("Mod", {h, g.ints({num_bins_})})}, {{"to", onnx_int32}});
}

LayerMemoryUse Hashing::memory_use(const LayerMemoryQuery&) const { return index_memory(DType::i32); }

}  // namespace accrue::layers
