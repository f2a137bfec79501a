// Model::save and load_model: a whole model in one safetensors file, the weights under
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

// While the model a file describes is built: it must match the file's tensors, none of its
// parameters larger than the largest and all of them together holding what the file holds
// (building may take a copy of each), so that a few bytes of JSON cannot ask for terabytes.
AllocationCeiling building_ceiling(const serialization::SafetensorsFile& file, const std::string& path) {
  std::size_t largest = 0, all = 0;
  for (const auto& [name, t] : file.tensors) {
    largest = std::max(largest, t.nbytes());
    all += t.nbytes();
  }
  return {std::max<std::size_t>(largest, 1 << 20), 2 * all + (std::size_t{16} << 20),
          fmt::format("while building the model {} describes (its tensors hold {}, the largest {})", path, format_bytes(all),
                      format_bytes(largest))};
}

// The model with what the file holds besides its layers: its vocabulary, its compile options and
// its weights.
Model finished(Model model, const ordered_json& j, const serialization::SafetensorsFile& file, const Reading& top) {
  if (j.contains("vocabulary")) model.set_vocabulary(vocabulary_of(j["vocabulary"], top));
  if (j.contains("signature")) detail::apply_signature_json(model, j["signature"], top.at("signature"));
  if (j.contains("compile"))
    if (const std::string why = detail::compile_from_json(model, j["compile"], top); !why.empty())
      log::info("{}: the model is not compiled: it was {}; compile it before training it further", top.path, why);
  serialization::TensorMatch match;
  if (!match.copy_all(model.named_state(), file.tensors, "the file"))
    top.fail(fmt::format("its weights do not fit the model it describes ({} problem{}):{}", match.problems.size(),
                         match.problems.size() == 1 ? "" : "s", match.problem_lines()));
  return model;
}

// A whole number in [0, end) read from `j`, or the reading fails naming `what`.
std::size_t index_of(const ordered_json& j, std::size_t end, const Reading& r, const std::string& what) {
  if (!j.is_number_integer() || j.get<std::int64_t>() < 0 || static_cast<std::size_t>(j.get<std::int64_t>()) >= end)
    r.fail(fmt::format("{} is {}, not one of 0 to {}", what, json_excerpt(j), end == 0 ? std::string("(none)") : std::to_string(end - 1)));
  return static_cast<std::size_t>(j.get<std::int64_t>());
}

// Graphs hold at most this many nodes: a file cannot make the loader walk for hours.
constexpr std::size_t max_nodes = 100000;

// A functional model: its layers called on its inputs' symbols node by node, as the program that
// wrote it called them, so that every check of a graph being written (shapes, how many inputs a
// layer takes, inputs unused, outputs unreachable) applies to the file, naming the node. A node
// reads only values made before it, so a file cannot describe a cycle.
Model graph_of(const ordered_json& j, const serialization::SafetensorsFile& file, const Reading& top) {
  if (!j.contains("inputs") || !j["inputs"].is_array() || !j["nodes"].is_array() || !j.contains("outputs") ||
      !j["outputs"].is_array())
    top.fail("the graph needs \"inputs\", \"nodes\" and \"outputs\" lists");
  const ordered_json& nodes = j["nodes"];
  if (nodes.size() > max_nodes) top.fail(fmt::format("the graph has {} nodes; Accrue reads at most {}", nodes.size(), max_nodes));
  std::vector<std::shared_ptr<Layer>> layers;
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < j["layers"].size(); ++i) {
    const ordered_json& l = j["layers"][i];
    layers.push_back(layer_of(l, top, fmt::format("layer {}", i)));
    keys.push_back(l.contains("key") && l["key"].is_string() ? l["key"].get<std::string>() : std::string());
  }
  std::vector<Symbol> values;
  for (std::size_t i = 0; i < j["inputs"].size(); ++i) {
    const ordered_json& in = j["inputs"][i];
    const Reading r = top.at(fmt::format("input {}", i));
    if (!in.is_object() || !in.contains("name") || !in["name"].is_string() || !in.contains("shape") || !in["shape"].is_array())
      r.fail("an input needs a \"name\" and a \"shape\"");
    const std::string dtype = in.contains("dtype") && in["dtype"].is_string() ? in["dtype"].get<std::string>() : "float32";
    if (dtype != "float32" && dtype != "int32") r.fail(fmt::format("its dtype is {}, not float32 or int32", printable_name(dtype)));
    try {
      values.push_back(layers::Input(Shape(in["shape"].get<std::vector<std::int64_t>>()),
                                     {.name = in["name"].get<std::string>(), .dtype = dtype == "int32" ? DType::i32 : DType::f32}));
    } catch (const Error& e) {
      r.fail(e.what());
    }
  }
  const std::size_t input_count = values.size();
  const AllocationCeiling ceiling = building_ceiling(file, top.path);
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const ordered_json& node = nodes[k];
    Reading r = top.at(fmt::format("node {}", k));
    if (!node.is_object() || !node.contains("layer") || !node.contains("inputs") || !node["inputs"].is_array())
      r.fail("a node needs a \"layer\" and its \"inputs\"");
    const std::size_t l = index_of(node["layer"], layers.size(), r, "its layer");
    r.where += fmt::format(" (layer {} '{}')", l, printable_name(layers[l]->name()));
    std::vector<Symbol> xs;
    for (const ordered_json& v : node["inputs"])
      xs.push_back(values[index_of(v, values.size(), r, "a value it reads (the inputs, then the nodes before it)")]);
    try {
      values.push_back(detail::call_layer(layers[l], xs, keys[l]));
    } catch (const Error& e) {
      r.fail(e.what());
    }
  }
  std::vector<Symbol> outputs;
  for (const ordered_json& v : j["outputs"]) outputs.push_back(values[index_of(v, values.size(), top, "an output")]);
  const std::vector<Symbol> inputs(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(input_count));
  const std::string name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : "model";
  try {
    // Layers built as their nodes were called (with the default generator), then given the file's weights.
    return finished(Model(inputs, outputs, {.name = name}), j, file, top);
  } catch (const Error& e) {
    top.fail(e.what());
  }
}

// The model `j` describes, built and holding the file's weights; a JSON value of an unexpected kind
// throws nlohmann's exception, which load_model names as damage.
Model model_of(const ordered_json& j, const serialization::SafetensorsFile& file, const Reading& top) {
  const std::string& path = top.path;
  if (!j.is_object() || !j.contains("format") || !j["format"].is_number_integer() || j["format"].get<std::int64_t>() != model_format)
    top.fail(fmt::format("the model is in format {}, this Accrue reads format {}",
                         j.is_object() && j.contains("format") ? json_excerpt(j["format"]) : "none", model_format));
  if (!j.contains("layers") || !j["layers"].is_array() || !j.contains("input_shape") || !j["input_shape"].is_array())
    top.fail("the model needs \"layers\" and \"input_shape\" lists");
  if (j.contains("nodes")) return graph_of(j, file, top);
  Sequential model;
  for (std::size_t i = 0; i < j["layers"].size(); ++i) model.add(layer_of(j["layers"][i], top, fmt::format("layer {}", i)));
  std::vector<std::int64_t> dims;
  try {
    dims = j["input_shape"].get<std::vector<std::int64_t>>();
  } catch (const nlohmann::json::exception&) {
    top.fail("\"input_shape\" is not a list of whole numbers");
  }
  {
    const AllocationCeiling ceiling = building_ceiling(file, path);
    model.build(Shape(dims));
  }
  return finished(std::move(model), j, file, top);
}

}  // namespace

void Model::save(const std::string& path) const {
  ACCRUE_CHECK(built_, "save: model '{}' is not built yet (layers::Input, build(shape) or fit), so it has no weights", name_);
  ordered_json model{{"format", model_format}, {"producer", "accrue " ACCRUE_VERSION}, {"name", name_},
                     {"input_shape", std::vector<std::int64_t>(input_shape()->dims().begin(), input_shape()->dims().end())}};
  ordered_json layers = ordered_json::array();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers.push_back(json_of(*layers_[i]));
    if (keys_[i] != layers_[i]->name() && keys_[i] != std::to_string(i)) layers.back()["key"] = keys_[i];
  }
  model["layers"] = std::move(layers);
  // A graph that is not a chain: its inputs, each node's layer and the values it reads (0.. the
  // inputs, then each node's output in order), and the output values.
  if (!is_chain()) {
    ordered_json inputs = ordered_json::array(), nodes = ordered_json::array();
    for (const GraphInput& in : inputs_)
      inputs.push_back({{"name", in.name},
                        {"shape", std::vector<std::int64_t>(in.shape->dims().begin(), in.shape->dims().end())},
                        {"dtype", std::string(dtype_name(in.dtype))}});
    for (const GraphNode& node : nodes_) nodes.push_back({{"layer", node.layer}, {"inputs", node.inputs}});
    model["inputs"] = std::move(inputs);
    model["nodes"] = std::move(nodes);
    model["outputs"] = outputs_;
  }
  if (compiled()) model["compile"] = detail::compile_json(*this);
  model["signature"] = detail::signature_json(signature());
  if (vocabulary_)
    model["vocabulary"] = {{"tokenizer", vocabulary_->tokenizer() == datasets::Tokenizer::byte ? "byte" : "character"},
                           {"characters", vocabulary_->characters()}};
  serialization::save_safetensors(path, named_state(),
                                  {{"format", "pt"}, {"producer", "accrue " ACCRUE_VERSION}, {model_key, model.dump()}});
}

Model load_model(const std::string& path) {
  serialization::SafetensorsFile file = serialization::load_safetensors(path);
  const Reading top{path, ""};
  const auto found = file.metadata.find(model_key);
  if (found == file.metadata.end())
    top.fail("holds weights but no model (no \"accrue.model\" in its metadata): Model::save writes one; for "
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
