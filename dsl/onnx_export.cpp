// Model::export_onnx: the layers' nodes (Layer::to_onnx) in one ONNX graph, checked by the
// onnx library's checker and strict shape inference, written atomically, and on request run in
// ONNX Runtime beside predict.

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include <accrue/config.hpp>
#include "layers/embedding.hpp"
#include "layers/normalization.hpp"
#include "onnx_graph.hpp"
#include "model.hpp"
#include "model_json.hpp"
#include "../framework/autograd/autograd.hpp"
#include "../framework/core/files.hpp"
#include "../framework/serialization/json_text.hpp"
#include "../framework/ops/ops.hpp"

namespace accrue {
namespace {

constexpr int supported_opset = 17;
constexpr std::int64_t ir_version = 8;  // the IR of opset 17 (ONNX 1.12)

// A value's type and shape; images of any size have a free "height" and "width".
void describe_value(::onnx::ValueInfoProto* v, const std::string& name, ::onnx::TensorProto::DataType type,
                    std::int64_t batch, const Shape& sample, bool any_image_size = false) {
  v->set_name(name);
  ::onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  ::onnx::TensorShapeProto* shape = t->mutable_shape();
  if (batch == onnx::dynamic) shape->add_dim()->set_dim_param("batch");
  else shape->add_dim()->set_dim_value(batch);
  for (int d = 0; d < sample.rank(); ++d) {
    if (any_image_size && d >= 1) shape->add_dim()->set_dim_param(d == 1 ? "height" : "width");
    else shape->add_dim()->set_dim_value(sample[d]);
  }
}

// A node of one input and one integer attribute, written after the graph's own nodes: `op` of
// `value` into `value/suffix`; returns that name.
std::string add_unary_node(::onnx::GraphProto& graph, const char* op, const std::string& value, const char* suffix,
                           const char* attribute, std::int64_t setting) {
  ::onnx::NodeProto* n = graph.add_node();
  n->set_op_type(op);
  n->set_name(value + "/" + op);
  n->add_input(value);
  n->add_output(value + "/" + suffix);
  ::onnx::AttributeProto* a = n->add_attribute();
  a->set_name(attribute);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(setting);
  return n->output(0);
}

// A Softmax over the last axis of `value`, for an output that gives logits.
std::string add_softmax(::onnx::GraphProto& graph, const std::string& value) {
  return add_unary_node(graph, "Softmax", value, "probabilities", "axis", -1);
}

// The signature in the file's metadata, for a program that serves it: all of it as JSON under
// "accrue.signature", and the first output's class names as a JSON list under "class_names".
void add_signature(::onnx::ModelProto& model, const ModelSignature& signature) {
  ::onnx::StringStringEntryProto* entry = model.add_metadata_props();
  entry->set_key("accrue.signature");
  entry->set_value(detail::signature_json(signature).dump());
  if (!signature.outputs.empty() && !signature.outputs[0].class_names.empty()) {
    entry = model.add_metadata_props();
    entry->set_key("class_names");
    entry->set_value(nlohmann::json(signature.outputs[0].class_names).dump());
  }
}

// Whether an input takes raw pixels as bytes would hold them: images stated in [0, 255].
bool takes_pixel_bytes(const InputSignature& in) {
  return in.layout == "NCHW" && in.dtype == DType::f32 && in.range && in.range->first == 0.0f && in.range->second == 255.0f;
}

// A Cast of the graph input `value` (uint8) to float32; returns the value the layers read.
std::string cast_to_float(::onnx::GraphProto& graph, const std::string& value) {
  return add_unary_node(graph, "Cast", value, "float", "to", ::onnx::TensorProto::FLOAT);
}

// A graph input; returns the value the layers read: the input, or its cast to float32 for a uint8
// input, marked as of any image size where it is.
std::string add_graph_input(onnx::Graph& graph, const std::string& name, ::onnx::TensorProto::DataType type,
                            std::int64_t batch, const Shape& sample, bool any_size) {
  ::onnx::GraphProto& g = *graph.impl().graph;
  describe_value(g.add_input(), name, type, batch, sample, any_size);
  const std::string read = type == ::onnx::TensorProto::UINT8 ? cast_to_float(g, name) : name;
  if (any_size) graph.set_any_image_size(read);
  return read;
}

// The exported layers start after the leading Normalization layers when preprocessing is left out.
std::size_t first_exported(const Model& model, bool include_preprocessing) {
  std::size_t first = 0;
  if (!include_preprocessing)
    while (first < model.size() && dynamic_cast<const layers::Normalization*>(&model.layer(first)) != nullptr) ++first;
  return first;
}

// An Identity node from `value` to `name`: a graph output that is an input, or that other nodes
// read under its own name.
void add_identity(::onnx::GraphProto& graph, const std::string& value, const std::string& name) {
  ::onnx::NodeProto* n = graph.add_node();
  n->set_op_type("Identity");
  n->set_name(name + "/Identity");
  n->add_input(value);
  n->add_output(name);
}

// Renames the output of the node that makes `value` to `name` (the graph's output), or adds an
// Identity where the value is the graph's input itself.
void name_output(::onnx::GraphProto& graph, const std::string& value, const std::string& name) {
  for (int i = graph.node_size() - 1; i >= 0; --i)
    for (std::string& out : *graph.mutable_node(i)->mutable_output())
      if (out == value) {
        out = name;
        return;
      }
  add_identity(graph, value, name);
}

// A model's output as the graph's output is made of it: the value, whether other nodes read it or it
// is an input (its name stays for them: the output is an Identity of it), its sample shape.
struct GraphOutput {
  std::string value;
  bool read_elsewhere = false;
  Shape shape;
};

// The graph's outputs under the signature's names, a Softmax after those that give logits when
// options.softmax asks (their signature then says probabilities); returns which got one.
std::vector<bool> write_outputs(::onnx::GraphProto& graph, const std::vector<GraphOutput>& outputs, ModelSignature& signature,
                                const OnnxExportOptions& options) {
  std::vector<bool> softmaxed;
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    OutputSignature& out = signature.outputs[o];
    std::string value = outputs[o].value;
    softmaxed.push_back(options.softmax && out.softmax_makes_probabilities());
    if (softmaxed.back()) {
      value = add_softmax(graph, value);
      out.meaning = "probabilities";
    }
    if (outputs[o].read_elsewhere && !softmaxed.back()) add_identity(graph, value, out.name);
    else name_output(graph, value, out.name);
    describe_value(graph.add_output(), out.name, ::onnx::TensorProto::FLOAT, options.batch, outputs[o].shape);
  }
  return softmaxed;
}

// The model's header: IR, producer, the operator set, the graph's name.
void start_model(onnx::Graph::Impl& g, int opset_version, const std::string& name) {
  g.model.set_ir_version(ir_version);
  g.model.set_producer_name("accrue");
  g.model.set_producer_version(ACCRUE_VERSION);
  ::onnx::OperatorSetIdProto* opset = g.model.add_opset_import();
  opset->set_domain("");
  opset->set_version(opset_version);
  g.graph->set_name(name);
}

// The vocabulary of the Embedding that first reads input `i` (a chain's node `chain_first`), or 0
// when an Embedding does not read it.
std::int64_t first_reader_vocabulary(const std::vector<std::shared_ptr<Layer>>& layers,
                                     const std::vector<detail::GraphNode>& nodes, std::optional<std::size_t> chain_first,
                                     std::size_t i) {
  for (std::size_t k = chain_first.value_or(0); k < nodes.size(); ++k) {
    const detail::GraphNode& node = nodes[k];
    if (chain_first ? k == *chain_first : std::find(node.inputs.begin(), node.inputs.end(), i) != node.inputs.end()) {
      const auto* embedding = dynamic_cast<const layers::Embedding*>(layers[node.layer].get());
      return embedding != nullptr ? embedding->vocab() : 0;
    }
  }
  return 0;
}

void check_model(::onnx::ModelProto& model, const std::string& path) {
  try {
    ::onnx::checker::check_model(model);
    // Strict: every node's inferred types and shapes must agree with what the graph declares.
    const ::onnx::ShapeInferenceOptions options{true, 1, false};
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    throw Error(fmt::format("export_onnx to {}: the ONNX checker refuses the graph Accrue wrote (a bug in a layer's "
                            "to_onnx): {}",
                            path, e.what()));
  }
}

// The model checked, then written atomically to `path`.
void write_checked(::onnx::ModelProto& model, const std::string& path) {
  check_model(model, path);
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error(fmt::format("export_onnx to {}: the model does not serialize", path));
  write_atomically(path, [&](std::FILE* f) { return std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size(); });
}

// An input of the file as verification draws it: its sample shape, and the vocabulary of the
// Embedding that reads it (0: none), or int32 read by another layer (a key-padding mask).
struct VerifiedInput {
  Shape sample;
  std::int64_t vocabulary = 0;
  DType dtype = DType::f32;
  bool uint8 = false;
};

// Verification inputs, one per graph input: `given` (a model of one input), or 7 samples of
// standard normal numbers, of tokens drawn from the vocabulary of the Embedding that reads the
// input, of int32 zeros (a mask that leaves nothing out), or of pixels 0 to 255 for a uint8 input.
std::vector<Tensor> verification_inputs(const std::vector<VerifiedInput>& inputs, const Tensor& given) {
  if (given.defined()) return {given};
  Generator generator(20261126);
  std::vector<Tensor> out;
  for (const auto& [sample, vocab, dtype, uint8] : inputs) {
    const Shape shape = sample.prepend(7);
    if (uint8) {
      std::vector<float> pixels = Tensor::uniform(shape, 0.0f, 256.0f, &generator).to_vector<float>();
      for (float& p : pixels) p = std::min(std::floor(p), 255.0f);
      out.push_back(Tensor::from(pixels, shape));
    } else if (vocab == 0 && dtype == DType::i32) {
      out.push_back(Tensor::zeros(shape, {.dtype = DType::i32}));
    } else if (vocab > 0) {
      const std::vector<float> u = Tensor::uniform(shape, 0.0f, static_cast<float>(vocab), &generator).to_vector<float>();
      std::vector<std::int32_t> tokens(u.size());
      for (std::size_t k = 0; k < u.size(); ++k)
        tokens[k] = std::min(static_cast<std::int32_t>(u[k]), static_cast<std::int32_t>(vocab - 1));
      out.push_back(Tensor::from(tokens, shape));
    } else {
      out.push_back(Tensor::normal(shape, 0.0f, 1.0f, &generator));
    }
  }
  return out;
}

// The differences between ONNX Runtime's outputs and predict's for `inputs`, at batch 1 (the first
// sample) and at the whole batch; the file of a chain starts after layer first - 1.
// `softmaxed`: per output, whether the file applies a softmax to it (OnnxExportOptions::softmax).
std::vector<onnx::Difference> verify(Model& model, const std::string& path, const std::vector<Tensor>& inputs,
                                     std::size_t first, const std::vector<bool>& softmaxed) {
  std::vector<onnx::Difference> out;
  const std::int64_t n = inputs[0].size(0);
  std::vector<std::int64_t> batches{1};
  if (n > 1) batches.push_back(n);
  for (const std::int64_t batch : batches) {
    std::vector<Tensor> xs;
    for (const Tensor& x : inputs) xs.push_back(batch == n ? x : ops::slice(x, 0, 0, 1));
    const std::vector<Tensor> expected = model.predict(xs, batch);
    std::vector<Tensor> fed;
    for (const Tensor& x : xs) fed.push_back(x.to(model.device()));
    {
      const EvaluationScope evaluating;
      const NoGradGuard no_grad;
      for (std::size_t i = 0; i < first; ++i) fed[0] = model.layer(i).forward(fed[0]);
    }
    for (Tensor& x : fed) x = x.to(Device::cpu());
    const std::vector<Tensor> got = onnx::run_onnxruntime(path, fed);
    for (std::size_t o = 0; o < expected.size(); ++o) {
      out.push_back(onnx::compare(got.at(o), softmaxed[o] ? ops::softmax(expected[o], -1) : expected[o]));
      out.back().batch = batch;
      if (expected.size() > 1) out.back().output = model.output_name(o);
    }
  }
  return out;
}

}  // namespace

namespace onnx {

Difference compare(const Tensor& onnx, const Tensor& accrue, double atol, double rtol) {
  ACCRUE_CHECK_SHAPE(onnx.shape() == accrue.shape(), "ONNX Runtime's output is shaped {}, Accrue's {}", onnx.shape(),
                     accrue.shape());
  const std::vector<float> a = onnx.to_vector<float>(), b = accrue.to_vector<float>();
  Difference d{.batch = accrue.shape().rank() > 0 ? accrue.size(0) : 1, .atol = atol, .rtol = rtol};
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double diff = std::fabs(static_cast<double>(a[k]) - b[k]);
    if (std::isnan(diff)) {  // a NaN on one side only, or on both: never within
      d.max_abs = d.max_rel = NAN;
      d.within = false;
      break;
    }
    d.max_abs = std::max(d.max_abs, diff);
    if (diff > atol) {
      const double rel = diff / std::fabs(static_cast<double>(b[k]));  // infinite where Accrue's is 0
      d.max_rel = std::max(d.max_rel, rel);
      d.within = d.within && rel <= rtol;
    }
  }
  return d;
}

namespace {

::onnx::ModelProto read_model(const std::string& path) {
  require_readable_file(path, "ONNX model");
  std::ifstream in(path, std::ios::binary);
  ::onnx::ModelProto model;
  if (!model.ParseFromIstream(&in) || !model.has_graph())
    throw ValueError(fmt::format("{}: not an ONNX model (it does not parse as one)", path));
  if (model.graph().input_size() == 0) throw ValueError(fmt::format("{}: the ONNX model takes no input", path));
  return model;
}

// A value's dimensions after the batch: -1 where free.
std::vector<std::int64_t> sample_dims(const ::onnx::ValueInfoProto& v, const std::string& path) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape() || v.type().tensor_type().shape().dim_size() < 1)
    throw ValueError(fmt::format("{}: '{}' is not a tensor with a batch dimension", path, v.name()));
  std::vector<std::int64_t> dims;
  const ::onnx::TensorShapeProto& shape = v.type().tensor_type().shape();
  for (int d = 1; d < shape.dim_size(); ++d) dims.push_back(shape.dim(d).has_dim_value() ? shape.dim(d).dim_value() : -1);
  return dims;
}

// What a file written elsewhere says of itself: its graph's inputs and outputs. Images (N, C, H, W)
// with a free height and width are taken at any size; their values' meaning is unknown.
ModelSignature signature_of_graph(const ::onnx::GraphProto& graph, const std::string& path) {
  ModelSignature s;
  for (const ::onnx::ValueInfoProto& v : graph.input()) {
    std::vector<std::int64_t> dims = sample_dims(v, path);
    const bool any = dims.size() == 3 && dims[0] > 0 && dims[1] < 0 && dims[2] < 0;
    if (any) dims[1] = dims[2] = 1;
    for (const std::int64_t d : dims)
      if (d < 1) throw ValueError(fmt::format("{}: input '{}' has a free dimension besides the batch", path, v.name()));
    const int type = v.type().tensor_type().elem_type();
    const Shape shape{std::span<const std::int64_t>(dims)};
    InputSignature in{.name = v.name(), .shape = shape, .any_image_size = any,
                      .dtype = type == ::onnx::TensorProto::INT32 ? DType::i32 : DType::f32,
                      .uint8 = type == ::onnx::TensorProto::UINT8};
    in.layout = accrue::detail::sample_layout(shape, in.dtype);
    s.inputs.push_back(std::move(in));
  }
  for (const ::onnx::ValueInfoProto& v : graph.output()) {
    std::vector<std::int64_t> dims = sample_dims(v, path);
    for (std::int64_t& d : dims) d = std::max<std::int64_t>(d, 1);
    OutputSignature out{.name = v.name(), .shape = Shape(std::span<const std::int64_t>(dims))};
    out.meaning = "values";
    s.outputs.push_back(std::move(out));
  }
  return s;
}

}  // namespace

Shape sample_shape(const std::string& path) {
  const ::onnx::ModelProto model = read_model(path);
  const std::vector<std::int64_t> dims = sample_dims(model.graph().input(0), path);
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (dims[d] < 0)
      throw ValueError(fmt::format("{}: input '{}' has a free dimension {} besides the batch", path,
                                   model.graph().input(0).name(), d + 1));
  return Shape(std::span<const std::int64_t>(dims));
}

std::vector<bool> uint8_inputs(const std::string& path) {
  const ::onnx::ModelProto model = read_model(path);
  std::vector<bool> out;
  for (const ::onnx::ValueInfoProto& v : model.graph().input())
    out.push_back(v.type().tensor_type().elem_type() == ::onnx::TensorProto::UINT8);
  return out;
}

ModelSignature signature(const std::string& path) {
  const ::onnx::ModelProto model = read_model(path);
  for (const ::onnx::StringStringEntryProto& entry : model.metadata_props()) {
    if (entry.key() != "accrue.signature") continue;
    const accrue::detail::Reading r{path, "its accrue.signature metadata"};
    try {
      return accrue::detail::signature_of_json(parse_json<accrue::detail::ordered_json>(entry.value(), "the signature"), r);
    } catch (const JsonError& e) {
      r.fail(e.what());
    } catch (const nlohmann::json::exception& e) {
      r.fail(fmt::format("damaged ({})", accrue::detail::json_reason(e)));
    }
  }
  return signature_of_graph(model.graph(), path);
}

std::string Difference::str() const {
  const std::string which = output.empty() ? fmt::format("batch {}", batch) : fmt::format("output '{}', batch {}", output, batch);
  if (max_abs <= atol) return fmt::format("{}: largest difference {:.3g} (within {:g} absolute)", which, max_abs, atol);
  return fmt::format("{}: largest difference {:.3g} absolute, {:.3g} relative where beyond {:g} ({} {:g} "
                     "absolute or {:g} relative)",
                     which, max_abs, max_rel, atol, within ? "within" : "NOT within", atol, rtol);
}

}  // namespace onnx

std::string OnnxExport::LayerNodes::ops_str() const {
  std::vector<std::pair<std::string, int>> counts;
  for (const std::string& op : ops) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == op; });
    if (it == counts.end()) counts.emplace_back(op, 1);
    else ++it->second;
  }
  std::string s;
  for (const auto& [op, n] : counts) s += (s.empty() ? "" : ", ") + (n == 1 ? op : fmt::format("{} x{}", op, n));
  return s.empty() ? "(none: the identity in inference)" : s;
}

std::string OnnxExport::str() const {
  std::size_t width = 0;
  for (const LayerNodes& l : layers) width = std::max(width, l.layer.size() + l.type.size() + 3);
  std::string out = fmt::format("ONNX nodes of each layer ({}):\n", path);
  for (const LayerNodes& l : layers) {
    out += fmt::format("  {:<{}} {}\n", fmt::format("{} ({})", l.layer, l.type), width, l.ops_str());
    for (const std::string& note : l.notes) out += fmt::format("  {:<{}}   {}\n", "", width, note);
  }
  for (const onnx::Difference& d : verification) out += "ONNX Runtime against predict, " + d.str() + "\n";
  return out;
}

OnnxExport Model::export_onnx(const std::string& path, const OnnxExportOptions& options) {
  ACCRUE_CHECK(built_, "export_onnx: model '{}' is not built yet (layers::Input, build(shape) or fit)", name_);
  ACCRUE_CHECK(options.opset == supported_opset, "export_onnx: opset {} asked for; Accrue writes opset {} (IR {})",
               options.opset, supported_opset, ir_version);
  ACCRUE_CHECK(options.batch >= 0, "export_onnx: batch {} is neither onnx::dynamic nor a batch size", options.batch);
  // A chain may leave its leading Normalization out; a graph exports every node.
  const bool chain = is_chain();
  const std::size_t first = chain ? first_exported(*this, options.include_preprocessing) : 0;
  ACCRUE_CHECK(first < layers_.size(), "export_onnx: model '{}' is only preprocessing, and include_preprocessing is off",
               name_);
  onnx::Graph graph(options.opset);
  onnx::Graph::Impl& g = graph.impl();
  start_model(g, options.opset, name_);
  // Each value's name in the file: the signature's. An input is int32 where it is declared so or an
  // Embedding reads it (its vocabulary then draws the verification's tokens).
  ModelSignature signature = this->signature();
  std::vector<std::string> names(inputs_.size() + nodes_.size());
  std::vector<VerifiedInput> verified_inputs;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const std::int64_t vocab = first_reader_vocabulary(layers_, nodes_, chain ? std::optional(first) : std::nullopt, i);
    const bool tokens = vocab > 0 || inputs_[i].dtype == DType::i32;
    const Shape sample = chain ? layers_[nodes_[first].layer]->input_shape() : *inputs_[i].shape;
    const bool any_size = options.any_image_size && takes_any_image_size(i);
    const bool bytes = options.uint8_pixels && takes_pixel_bytes(signature.inputs[i]) && !tokens;
    names[i] = add_graph_input(graph, chain ? "input" : inputs_[i].name, bytes ? ::onnx::TensorProto::UINT8 : tokens ? ::onnx::TensorProto::INT32 : ::onnx::TensorProto::FLOAT,
                               options.batch, sample, any_size);
    signature.inputs[i].uint8 = bytes;
    verified_inputs.push_back({sample, vocab, tokens ? DType::i32 : DType::f32, bytes});
  }
  if (chain && first > 0) names[node_value(first - 1)] = "input";
  OnnxExport result{.path = path};
  for (std::size_t k = first; k < nodes_.size(); ++k) {
    const Layer& layer = *layers_[nodes_[k].layer];
    result.layers.push_back({.layer = layer_id(layer, keys_[nodes_[k].layer]), .type = layer.type_name()});
    std::vector<std::string> xs;
    for (const std::size_t v : nodes_[k].inputs) xs.push_back(names[v]);
    try {
      names[node_value(k)] = g.top_layer(k, layer, xs, result.layers.back());
      if (layer.image_sizes() == Layer::ImageSizes::follows && xs.size() == 1 && graph.any_image_size(xs[0]))
        graph.set_any_image_size(names[node_value(k)]);
    } catch (Error& e) {
      e.prepend(fmt::format("export_onnx to {}: layer {}: ", path, k));
      throw;
    }
  }
  std::vector<GraphOutput> outputs;
  for (const std::size_t v : outputs_) {
    const bool read = std::any_of(nodes_.begin(), nodes_.end(),
                                  [&](const GraphNode& n) { return std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end(); });
    outputs.push_back({names[v], read || v < inputs_.size(), value_shape(v)});
  }
  const std::vector<bool> softmaxed = write_outputs(*g.graph, outputs, signature, options);
  add_signature(g.model, signature);
  write_checked(g.model, path);
  onnx_layers_ = result.layers;
  onnx_path_ = path;
  if (options.verify)
    result.verification = verify(*this, path, verification_inputs(verified_inputs, options.verify_inputs), first, softmaxed);
  return result;
}

}  // namespace accrue
