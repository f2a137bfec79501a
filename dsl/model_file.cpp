// Sequential::save and load_model: a whole model in one safetensors file, the weights under
// PyTorch's names and the architecture as JSON in the metadata (Keras's model.save/load_model).

#include <accrue/config.hpp>
#include "layer_registry.hpp"
#include "model_json.hpp"
#include "sequential.hpp"
#include "../framework/core/log.hpp"
#include "../framework/core/memory.hpp"
#include "../framework/serialization/checkpoint.hpp"
#include "../framework/serialization/json_text.hpp"
#include "../framework/core/utf8.hpp"

namespace accrue {
namespace {

using detail::config_of;
using detail::json_of;
using detail::ordered_json;
using detail::Reading;
constexpr const char* model_key = "accrue.model";
constexpr int model_format = 1;

ordered_json json_of(const Layer& layer) {
  ordered_json j{{"type", layer.type_name()}, {"name", layer.name()}};
  j["config"] = json_of(layer.config());
  const std::vector<const Layer*> inner = layer.given_layers();
  if (!inner.empty()) {
    ordered_json layers = ordered_json::array();
    for (const Layer* l : inner) layers.push_back(json_of(*l));
    j["layers"] = std::move(layers);
  }
  return j;
}

// Layers inside layers (Residual) nest at most this deep: a file cannot exhaust the stack.
constexpr int max_nesting = 64;

std::unique_ptr<Layer> layer_of(const ordered_json& j, const Reading& outer, const std::string& place, int depth = 0) {
  Reading r = outer.at(place);
  if (depth >= max_nesting) r.fail(fmt::format("layers nest more than {} deep", max_nesting));
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string() || !j.contains("config") || !j["config"].is_object())
    r.fail("a layer needs a \"type\" and a \"config\" object");
  const std::string type = j["type"].get<std::string>();
  r.where += " (" + printable_name(type) + ")";
  const LayerConfig config = config_of(j["config"], r);
  std::vector<std::unique_ptr<Layer>> inner;
  if (j.contains("layers")) {
    if (!j["layers"].is_array()) r.fail("\"layers\" is not a list");
    for (std::size_t i = 0; i < j["layers"].size(); ++i) inner.push_back(layer_of(j["layers"][i], r, fmt::format("inner layer {}", i), depth + 1));
  }
  std::unique_ptr<Layer> layer;
  try {
    layer = make_layer(type, config, std::move(inner));
  } catch (const Error& e) {
    r.fail(e.what());
  }
  if (j.contains("name") && j["name"].is_string()) layer->set_name(j["name"].get<std::string>());
  return layer;
}

datasets::Vocabulary vocabulary_of(const ordered_json& j, const Reading& r) {
  const bool valid = j.is_object() && j.contains("tokenizer") && j["tokenizer"].is_string() &&
                     j.contains("characters") && j["characters"].is_string();
  const std::string tokenizer = valid ? j["tokenizer"].get<std::string>() : "";
  if (tokenizer == "byte") return datasets::Vocabulary{"", datasets::Tokenizer::byte};
  if (tokenizer != "character")
    r.fail("the vocabulary needs a \"tokenizer\" (\"byte\" or \"character\") and its \"characters\"");
  const std::string characters = j["characters"].get<std::string>();
  datasets::Vocabulary vocabulary{characters, datasets::Tokenizer::character};
  // Sorted and each once, as Vocabulary::characters() writes them: token i stays character i.
  if (vocabulary.characters() != characters)
    r.fail("the vocabulary's characters are not each once in order, so its tokens would not be the trained ones");
  return vocabulary;
}

// The model `j` describes, built and holding the file's weights; a JSON value of an unexpected kind
// throws nlohmann's exception, which load_model names as damage.
Sequential model_of(const ordered_json& j, const serialization::SafetensorsFile& file, const Reading& top) {
  const std::string& path = top.path;
  if (!j.is_object() || !j.contains("format") || !j["format"].is_number_integer() || j["format"].get<std::int64_t>() != model_format)
    top.fail(fmt::format("the model is in format {}, this Accrue reads format {}",
                         j.is_object() && j.contains("format") ? json_excerpt(j["format"]) : "none", model_format));
  if (!j.contains("layers") || !j["layers"].is_array() || !j.contains("input_shape") || !j["input_shape"].is_array())
    top.fail("the model needs \"layers\" and \"input_shape\" lists");
  Sequential model;
  for (std::size_t i = 0; i < j["layers"].size(); ++i) model.add(layer_of(j["layers"][i], top, fmt::format("layer {}", i)));
  std::vector<std::int64_t> dims;
  try {
    dims = j["input_shape"].get<std::vector<std::int64_t>>();
  } catch (const nlohmann::json::exception&) {
    top.fail("\"input_shape\" is not a list of whole numbers");
  }
  {
    // The model must match the file's tensors: none of its parameters is larger than the largest,
    // and all of them together hold what the file holds (building may take a copy of each).
    std::size_t largest = 0, all = 0;
    for (const auto& [name, t] : file.tensors) {
      largest = std::max(largest, t.nbytes());
      all += t.nbytes();
    }
    const AllocationCeiling ceiling{std::max<std::size_t>(largest, 1 << 20), 2 * all + (std::size_t{16} << 20),
                                    fmt::format("while building the model {} describes (its tensors hold {}, the largest {})",
                                                path, format_bytes(all), format_bytes(largest))};
    model.build(Shape(dims));
  }
  if (j.contains("vocabulary")) model.set_vocabulary(vocabulary_of(j["vocabulary"], top));
  if (j.contains("compile"))
    if (const std::string why = detail::compile_from_json(model, j["compile"], top); !why.empty())
      log::info("{}: the model is not compiled: it was {}; compile it before training it further", path, why);
  serialization::TensorMatch match;
  if (!match.copy_all(model.named_state(), file.tensors, "the file"))
    top.fail(fmt::format("its weights do not fit the model it describes ({} problem{}):{}", match.problems.size(),
                         match.problems.size() == 1 ? "" : "s", match.problem_lines()));
  return model;
}

}  // namespace

void Sequential::save(const std::string& path) const {
  ACCRUE_CHECK(built_, "save: model '{}' is not built yet (layers::Input, build(shape) or fit), so it has no weights", name_);
  ordered_json model{{"format", model_format}, {"producer", "accrue " ACCRUE_VERSION}, {"name", name_},
                     {"input_shape", std::vector<std::int64_t>(input_shape_->dims().begin(), input_shape_->dims().end())}};
  ordered_json layers = ordered_json::array();
  for (const auto& layer : layers_) layers.push_back(json_of(*layer));
  model["layers"] = std::move(layers);
  if (compiled()) model["compile"] = detail::compile_json(recipe_, loss_, metrics_);
  if (vocabulary_)
    model["vocabulary"] = {{"tokenizer", vocabulary_->tokenizer() == datasets::Tokenizer::byte ? "byte" : "character"},
                           {"characters", vocabulary_->characters()}};
  serialization::save_safetensors(path, named_state(),
                                  {{"format", "pt"}, {"producer", "accrue " ACCRUE_VERSION}, {model_key, model.dump()}});
}

Sequential load_model(const std::string& path) {
  serialization::SafetensorsFile file = serialization::load_safetensors(path);
  const Reading top{path, ""};
  const auto found = file.metadata.find(model_key);
  if (found == file.metadata.end())
    top.fail("holds weights but no model (no \"accrue.model\" in its metadata): Sequential::save writes one; for "
             "weights alone, make the model in code and call load_weights");
  ordered_json j;
  try {
    j = parse_json<ordered_json>(found->second, "the model's description");
  } catch (const JsonError& e) {
    top.fail(e.what());
  }
  try {
    return model_of(j, file, top);
  } catch (const nlohmann::json::exception& e) {
    top.fail(fmt::format("the model's description is damaged ({})", detail::json_reason(e)));
  }
}

}  // namespace accrue
