// Model::signature and what it reads: the inputs that take images of any size, the outputs'
// meaning, the class names and input ranges a user or fit set; and the signature as a model file
// keeps it (model_json.hpp).

#include <algorithm>
#include <cmath>

#include "model.hpp"
#include "model_json.hpp"

namespace accrue {

std::string detail::sample_layout(const Shape& sample, DType dtype) {
  if (sample.rank() == 3) return "NCHW";
  if (sample.rank() == 1) return dtype == DType::i32 ? "NT" : "NC";
  return "N...";
}

// Walks the graph from the input: values that may vary in height and width are the input and what
// `follows` layers make of them; one that meets any other layer, or is an output, varies too far.
bool Model::takes_any_image_size(std::size_t input) const {
  if (!built_ || input >= inputs_.size() || !inputs_[input].shape || inputs_[input].shape->rank() != 3) return false;
  std::vector<bool> varies(inputs_.size() + nodes_.size(), false);
  varies[input] = true;
  bool resized = false;
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    const GraphNode& node = nodes_[k];
    if (std::none_of(node.inputs.begin(), node.inputs.end(), [&](std::size_t v) { return varies[v]; })) continue;
    const Layer::ImageSizes rule = layers_[node.layer]->image_sizes();
    if (node.inputs.size() != 1 || rule == Layer::ImageSizes::fixed) return false;
    if (rule == Layer::ImageSizes::follows) varies[inputs_.size() + k] = true;
    else resized = true;
  }
  for (const std::size_t v : outputs_)
    if (varies[v]) return false;
  return resized;
}

namespace {

// What an output holds: its last layer's activation says, else the loss it was trained with.
std::string meaning_of(const Layer* last, const Loss* loss) {
  if (last != nullptr && last->type_name() == "Softmax") return "probabilities";
  if (last != nullptr && last->type_name() == "Sigmoid") return "probabilities (each entry on its own)";
  if (loss == nullptr || !loss->defined()) return "values";
  if (loss->name() == "CrossEntropy") return OutputSignature::logits_for_softmax;
  if (loss->name() == "BinaryCrossEntropy" && loss->config()) {
    for (const auto& [option, value] : *loss->config())
      if (option == "from_logits" && std::get_if<bool>(&value) && std::get<bool>(value))
        return "logits (sigmoid gives probabilities)";
    return "probabilities (each entry on its own)";
  }
  return "values";
}

}  // namespace

ModelSignature Model::signature() const {
  ACCRUE_CHECK(built_, "signature: model '{}' is not built yet, so its shapes are unknown", name_);
  ModelSignature s;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    InputSignature in{.name = is_chain() ? "input" : inputs_[i].name, .shape = *inputs_[i].shape, .any_image_size = takes_any_image_size(i),
                      .dtype = inputs_[i].dtype, .layout = detail::sample_layout(*inputs_[i].shape, inputs_[i].dtype)};
    if (i < input_ranges_.size()) in.range = input_ranges_[i];
    if (i < table_columns_.size()) in.table = table_columns_[i];
    // The first layer that resizes gives every image its size.
    if (in.any_image_size)
      for (const GraphNode& node : nodes_)
        if (layers_[node.layer]->image_sizes() == Layer::ImageSizes::resizes) {
          in.resized_to = layers_[node.layer]->output_shape();
          break;
        }
    s.inputs.push_back(std::move(in));
  }
  for (std::size_t o = 0; o < outputs_.size(); ++o) {
    const std::size_t v = outputs_[o];
    const Layer* last = v < inputs_.size() ? nullptr : layers_[nodes_[v - inputs_.size()].layer].get();
    const Loss* loss = o < losses_.size() ? &losses_[o].loss : nullptr;
    s.outputs.push_back({.name = is_chain() ? "output" : output_name(o), .shape = value_shape(v),
                         .meaning = meaning_of(last, loss), .class_names = class_names(o)});
  }
  return s;
}

Model& Model::set_class_names(std::vector<std::string> names, std::size_t output) {
  ACCRUE_CHECK(output < outputs_.size(), "set_class_names: model '{}' has {} output{}, not {}", name_, outputs_.size(),
               outputs_.size() == 1 ? "" : "s", output + 1);
  if (built_ && !names.empty()) {
    const Shape shape = value_shape(outputs_[output]);
    const std::int64_t entries = shape.rank() == 0 ? 1 : shape[shape.rank() - 1];
    ACCRUE_CHECK(static_cast<std::int64_t>(names.size()) == entries || (entries == 1 && names.size() == 2),
                 "set_class_names: output '{}' gives {} entries per sample ({}), but {} names were given", output_name(output),
                 entries, shape, names.size());
  }
  if (class_names_.size() < outputs_.size()) class_names_.resize(outputs_.size());
  class_names_[output] = std::move(names);
  return *this;
}

const std::vector<std::string>& Model::class_names(std::size_t output) const {
  static const std::vector<std::string> none;
  return output < class_names_.size() ? class_names_[output] : none;
}

Model& Model::set_input_range(float low, float high, std::size_t input) {
  ACCRUE_CHECK(input < inputs_.size(), "set_input_range: model '{}' has {} input{}, not {}", name_, inputs_.size(),
               inputs_.size() == 1 ? "" : "s", input + 1);
  ACCRUE_CHECK(std::isfinite(low) && std::isfinite(high) && low < high,
               "set_input_range: [{}, {}] is not a range of finite values, low below high", low, high);
  if (input_ranges_.size() < inputs_.size()) input_ranges_.resize(inputs_.size());
  input_ranges_[input] = std::make_pair(low, high);
  return *this;
}

Model& Model::set_table_columns(TableColumns columns, std::size_t input) {
  ACCRUE_CHECK(input < inputs_.size(), "set_table_columns: model '{}' has {} input{}, not {}", name_, inputs_.size(),
               inputs_.size() == 1 ? "" : "s", input + 1);
  const std::string where = fmt::format("set_table_columns: input '{}' of model '{}'", inputs_[input].name, name_);
  ACCRUE_CHECK(!columns.columns.empty(), "{}: no columns given", where);
  ACCRUE_CHECK(!columns.text || (columns.text_bytes >= 1 && columns.text_bytes <= 4096),
               "{}: text {} bytes wide (1 to 4096)", where, columns.text_bytes);
  ACCRUE_CHECK(!columns.missing || std::isfinite(*columns.missing), "{}: the missing value {} is not finite", where,
               *columns.missing);
  if (const std::optional<Shape>& shape = inputs_[input].shape) {
    const auto k = static_cast<std::int64_t>(columns.columns.size());
    const Shape wanted = columns.text ? Shape{k, columns.text_bytes} : Shape{k};
    ACCRUE_CHECK_SHAPE(*shape == wanted && (!columns.text || inputs_[input].dtype == DType::i32),
                       "{}: {} column{} read as {} make samples of {}{}, the input takes {} {}", where, k, k == 1 ? "" : "s",
                       columns.text ? "text" : "numbers", wanted, columns.text ? " int32" : "", dtype_name(inputs_[input].dtype),
                       *shape);
  }
  if (table_columns_.size() < inputs_.size()) table_columns_.resize(inputs_.size());
  table_columns_[input] = std::move(columns);
  return *this;
}

namespace detail {
namespace {

ordered_json table_json(const TableColumns& t) {
  ordered_json columns = ordered_json::array();
  for (const auto& c : t.columns) {
    if (const std::string* name = std::get_if<std::string>(&c)) columns.push_back(*name);
    else columns.push_back(std::get<int>(c));
  }
  ordered_json j{{"columns", std::move(columns)}, {"text", t.text}};
  if (t.text) j["text_bytes"] = t.text_bytes;
  if (t.missing) j["missing"] = *t.missing;
  if (!t.missing_values.empty()) j["missing_values"] = t.missing_values;
  return j;
}

std::vector<std::string> texts_of(const ordered_json& j, const Reading& r, const std::string& what) {
  if (!j.is_array()) r.fail(fmt::format("{} are not a list", what));
  std::vector<std::string> out;
  for (const ordered_json& t : j) {
    if (!t.is_string()) r.fail(fmt::format("{} are not all texts", what));
    out.push_back(t.get<std::string>());
  }
  return out;
}

TableColumns table_of(const ordered_json& j, const Reading& r, const std::string& what) {
  if (!j.is_object() || !j.contains("columns") || !j["columns"].is_array() || j["columns"].empty())
    r.fail(fmt::format("{}'s table is not an object with a list of columns", what));
  TableColumns t{.text = j.value("text", false), .text_bytes = j.value("text_bytes", std::int64_t{0})};
  for (const ordered_json& c : j["columns"]) {
    if (c.is_string()) t.columns.emplace_back(c.get<std::string>());
    else if (c.is_number_integer() && c.get<std::int64_t>() >= 0 && c.get<std::int64_t>() < (std::int64_t{1} << 30))
      t.columns.emplace_back(c.get<int>());
    else r.fail(fmt::format("{}'s table column {} is neither a name nor a position", what, c.dump()));
  }
  if (j.contains("missing")) {
    if (!j["missing"].is_number()) r.fail(fmt::format("{}'s missing value is not a number", what));
    t.missing = j["missing"].get<float>();
  }
  if (j.contains("missing_values")) t.missing_values = texts_of(j["missing_values"], r, what + "'s missing values");
  return t;
}

}  // namespace

ordered_json signature_json(const ModelSignature& s) {
  ordered_json inputs = ordered_json::array(), outputs = ordered_json::array();
  for (const InputSignature& in : s.inputs) {
    ordered_json j{{"name", in.name},
                   {"shape", std::vector<std::int64_t>(in.shape.dims().begin(), in.shape.dims().end())},
                   {"any_image_size", in.any_image_size},
                   {"dtype", std::string(dtype_name(in.dtype))},
                   {"layout", in.layout}};
    if (in.uint8) j["uint8"] = true;
    if (in.range) j["range"] = {in.range->first, in.range->second};
    if (in.table) j["table"] = table_json(*in.table);
    inputs.push_back(std::move(j));
  }
  for (const OutputSignature& o : s.outputs)
    outputs.push_back({{"name", o.name},
                       {"shape", std::vector<std::int64_t>(o.shape.dims().begin(), o.shape.dims().end())},
                       {"meaning", o.meaning},
                       {"class_names", o.class_names}});
  return {{"inputs", std::move(inputs)}, {"outputs", std::move(outputs)}};
}

namespace {

Shape shape_of(const ordered_json& j, const Reading& r, const std::string& what) {
  if (!j.is_array() || j.size() > 8) r.fail(fmt::format("{}'s shape is not a list of at most 8 sizes", what));
  std::vector<std::int64_t> dims;
  for (const ordered_json& d : j) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 1 || d.get<std::int64_t>() > (std::int64_t{1} << 40))
      r.fail(fmt::format("{}'s shape holds {}, not a size", what, d.dump()));
    dims.push_back(d.get<std::int64_t>());
  }
  return Shape(std::span<const std::int64_t>(dims));
}

std::string text_of(const ordered_json& j, const char* key, const Reading& r, const std::string& what) {
  if (!j.contains(key) || !j[key].is_string()) r.fail(fmt::format("{} has no \"{}\" text", what, key));
  return j[key].get<std::string>();
}

InputSignature input_of(const ordered_json& j, const Reading& r, const std::string& what) {
  if (!j.is_object() || !j.contains("shape")) r.fail(fmt::format("{} is not an object with a shape", what));
  InputSignature in{.name = text_of(j, "name", r, what), .shape = shape_of(j["shape"], r, what),
                    .any_image_size = j.value("any_image_size", false), .layout = text_of(j, "layout", r, what)};
  const std::string dtype = text_of(j, "dtype", r, what);
  if (dtype != "float32" && dtype != "int32") r.fail(fmt::format("{}'s dtype {} is neither float32 nor int32", what, dtype));
  in.dtype = dtype == "int32" ? DType::i32 : DType::f32;
  in.uint8 = j.value("uint8", false);
  if (j.contains("range")) {
    const ordered_json& range = j["range"];
    if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number() ||
        !(range[0].get<double>() < range[1].get<double>()) || !std::isfinite(range[0].get<double>()) ||
        !std::isfinite(range[1].get<double>()))
      r.fail(fmt::format("{}'s range is not two finite numbers, low below high", what));
    in.range = std::make_pair(range[0].get<float>(), range[1].get<float>());
  }
  if (j.contains("table")) in.table = table_of(j["table"], r, what);
  return in;
}

OutputSignature output_of(const ordered_json& j, const Reading& r, const std::string& what) {
  if (!j.is_object() || !j.contains("shape")) r.fail(fmt::format("{} is not an object with a shape", what));
  OutputSignature o{.name = text_of(j, "name", r, what), .shape = shape_of(j["shape"], r, what),
                    .meaning = text_of(j, "meaning", r, what)};
  if (j.contains("class_names")) o.class_names = texts_of(j["class_names"], r, what + "'s class names");
  return o;
}

}  // namespace

ModelSignature signature_of_json(const ordered_json& j, const Reading& r) {
  if (!j.is_object() || !j.contains("inputs") || !j["inputs"].is_array() || !j.contains("outputs") || !j["outputs"].is_array())
    r.fail("the signature needs \"inputs\" and \"outputs\" lists");
  ModelSignature s;
  for (std::size_t i = 0; i < j["inputs"].size(); ++i) s.inputs.push_back(input_of(j["inputs"][i], r, fmt::format("input {}", i)));
  for (std::size_t o = 0; o < j["outputs"].size(); ++o)
    s.outputs.push_back(output_of(j["outputs"][o], r, fmt::format("output {}", o)));
  return s;
}

// What a user stated is read back (ranges, class names); the rest follows from the model.
void apply_signature_json(Model& model, const ordered_json& j, const Reading& r) {
  const ModelSignature s = signature_of_json(j, r);
  if (s.inputs.size() != model.input_count() || s.outputs.size() != model.output_count())
    r.fail(fmt::format("the signature lists {} inputs and {} outputs, the model has {} and {}", s.inputs.size(),
                       s.outputs.size(), model.input_count(), model.output_count()));
  try {
    for (std::size_t i = 0; i < s.inputs.size(); ++i)
      if (s.inputs[i].range) model.set_input_range(s.inputs[i].range->first, s.inputs[i].range->second, i);
    for (std::size_t i = 0; i < s.inputs.size(); ++i)
      if (s.inputs[i].table) model.set_table_columns(*s.inputs[i].table, i);
    for (std::size_t o = 0; o < s.outputs.size(); ++o) model.set_class_names(s.outputs[o].class_names, o);
  } catch (const Error& e) {
    r.fail(e.what());
  }
}

}  // namespace detail
}  // namespace accrue
