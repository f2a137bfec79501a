// Sequential::export_onnx: the layers' nodes (Layer::to_onnx) in one ONNX graph, checked by the
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
#include "sequential.hpp"
#include "../framework/autograd/autograd.hpp"
#include "../framework/core/files.hpp"
#include "../framework/ops/ops.hpp"

namespace accrue {
namespace {

constexpr int supported_opset = 17;
constexpr std::int64_t ir_version = 8;  // the IR of opset 17 (ONNX 1.12)

void describe_value(::onnx::ValueInfoProto* v, const std::string& name, ::onnx::TensorProto::DataType type,
                    std::int64_t batch, const Shape& sample) {
  v->set_name(name);
  ::onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  ::onnx::TensorShapeProto* shape = t->mutable_shape();
  if (batch == onnx::dynamic) shape->add_dim()->set_dim_param("batch");
  else shape->add_dim()->set_dim_value(batch);
  for (std::int64_t d : sample) shape->add_dim()->set_dim_value(d);
}

// The exported layers start after the leading Normalization layers when preprocessing is left out.
std::size_t first_exported(const Sequential& model, bool include_preprocessing) {
  std::size_t first = 0;
  if (!include_preprocessing)
    while (first < model.size() && dynamic_cast<const layers::Normalization*>(&model.layer(first)) != nullptr) ++first;
  return first;
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
  ::onnx::NodeProto* n = graph.add_node();
  n->set_op_type("Identity");
  n->set_name("output/Identity");
  n->add_input(value);
  n->add_output(name);
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

// Verification inputs: `given`, or 7 samples of standard normal numbers, or of tokens drawn from
// the first Embedding's vocabulary.
Tensor verification_inputs(const Sequential& model, const Tensor& given) {
  if (given.defined()) return given;
  Generator generator(20261126);
  const Shape shape = model.input_shape()->prepend(7);
  if (const auto* embedding = dynamic_cast<const layers::Embedding*>(&model.layer(0))) {
    const std::vector<float> u =
        Tensor::uniform(shape, 0.0f, static_cast<float>(embedding->vocab()), &generator).to_vector<float>();
    std::vector<std::int32_t> tokens(u.size());
    for (std::size_t k = 0; k < u.size(); ++k)
      tokens[k] = std::min(static_cast<std::int32_t>(u[k]), static_cast<std::int32_t>(embedding->vocab() - 1));
    return Tensor::from(tokens, shape);
  }
  return Tensor::normal(shape, 0.0f, 1.0f, &generator);
}

// The differences between ONNX Runtime's outputs and predict's for `inputs`, at batch 1 (the first
// sample) and at the whole batch; the file starts after layer first - 1.
std::vector<onnx::Difference> verify(Sequential& model, const std::string& path, const Tensor& inputs, std::size_t first) {
  std::vector<onnx::Difference> out;
  const std::int64_t n = inputs.size(0);
  std::vector<std::int64_t> batches{1};
  if (n > 1) batches.push_back(n);
  for (const std::int64_t batch : batches) {
    const Tensor x = batch == n ? inputs : ops::slice(inputs, 0, 0, 1);
    const Tensor expected = model.predict(x, batch);
    Tensor fed = x.to(model.device());
    {
      const EvaluationScope evaluating;
      const NoGradGuard no_grad;
      for (std::size_t i = 0; i < first; ++i) fed = model.layer(i).forward(fed);
    }
    const std::vector<Tensor> got = onnx::run_onnxruntime(path, {fed.to(Device::cpu())});
    out.push_back(onnx::compare(got.at(0), expected));
    out.back().batch = batch;
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

Shape sample_shape(const std::string& path) {
  require_readable_file(path, "ONNX model");
  std::ifstream in(path, std::ios::binary);
  ::onnx::ModelProto model;
  if (!model.ParseFromIstream(&in) || !model.has_graph())
    throw ValueError(fmt::format("{}: not an ONNX model (it does not parse as one)", path));
  if (model.graph().input_size() == 0) throw ValueError(fmt::format("{}: the ONNX model takes no input", path));
  const ::onnx::ValueInfoProto& input = model.graph().input(0);
  if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape() ||
      input.type().tensor_type().shape().dim_size() < 1)
    throw ValueError(fmt::format("{}: input '{}' is not a tensor with a batch dimension", path, input.name()));
  std::vector<std::int64_t> dims;
  const ::onnx::TensorShapeProto& shape = input.type().tensor_type().shape();
  for (int d = 1; d < shape.dim_size(); ++d) {
    if (!shape.dim(d).has_dim_value())
      throw ValueError(fmt::format("{}: input '{}' has a free dimension {} besides the batch", path, input.name(), d));
    dims.push_back(shape.dim(d).dim_value());
  }
  return Shape(std::span<const std::int64_t>(dims));
}

std::string Difference::str() const {
  if (max_abs <= atol) return fmt::format("batch {}: largest difference {:.3g} (within {:g} absolute)", batch, max_abs, atol);
  return fmt::format("batch {}: largest difference {:.3g} absolute, {:.3g} relative where beyond {:g} ({} {:g} "
                     "absolute or {:g} relative)",
                     batch, max_abs, max_rel, atol, within ? "within" : "NOT within", atol, rtol);
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

OnnxExport Sequential::export_onnx(const std::string& path, const OnnxExportOptions& options) {
  ACCRUE_CHECK(built_, "export_onnx: model '{}' is not built yet (layers::Input, build(shape) or fit)", name_);
  ACCRUE_CHECK(options.opset == supported_opset, "export_onnx: opset {} asked for; Accrue writes opset {} (IR {})",
               options.opset, supported_opset, ir_version);
  ACCRUE_CHECK(options.batch >= 0, "export_onnx: batch {} is neither onnx::dynamic nor a batch size", options.batch);
  const std::size_t first = first_exported(*this, options.include_preprocessing);
  ACCRUE_CHECK(first < layers_.size(), "export_onnx: model '{}' is only preprocessing, and include_preprocessing is off",
               name_);
  onnx::Graph graph(options.opset);
  onnx::Graph::Impl& g = graph.impl();
  g.model.set_ir_version(ir_version);
  g.model.set_producer_name("accrue");
  g.model.set_producer_version(ACCRUE_VERSION);
  ::onnx::OperatorSetIdProto* opset = g.model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  g.graph->set_name(name_);
  const bool tokens = dynamic_cast<const layers::Embedding*>(layers_[first].get()) != nullptr;
  describe_value(g.graph->add_input(), "input", tokens ? ::onnx::TensorProto::INT32 : ::onnx::TensorProto::FLOAT,
                 options.batch, layers_[first]->input_shape());
  OnnxExport result{.path = path};
  std::string x = "input";
  for (std::size_t i = first; i < layers_.size(); ++i) {
    const Layer& layer = *layers_[i];
    result.layers.push_back({.layer = layer.name(), .type = layer.type_name()});
    try {
      x = g.top_layer(i, layer, x, result.layers.back());
    } catch (Error& e) {
      e.prepend(fmt::format("export_onnx to {}: layer {}: ", path, i));
      throw;
    }
  }
  name_output(*g.graph, x, "output");
  describe_value(g.graph->add_output(), "output", ::onnx::TensorProto::FLOAT, options.batch, output_shape());
  check_model(g.model, path);
  std::string bytes;
  if (!g.model.SerializeToString(&bytes)) throw Error(fmt::format("export_onnx to {}: the model does not serialize", path));
  write_atomically(path, [&](std::FILE* f) { return std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size(); });
  onnx_layers_ = result.layers;
  onnx_path_ = path;
  if (options.verify) result.verification = verify(*this, path, verification_inputs(*this, options.verify_inputs), first);
  return result;
}

}  // namespace accrue
