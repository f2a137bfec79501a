// onnx::Graph: the graph a model's layers write their nodes into, held as the onnx library's
// protobuf classes (onnx_graph.hpp is the part Model::export_onnx uses besides).

#include "onnx_graph.hpp"

#include <fmt/format.h>

#include "layer.hpp"
#include "../framework/core/error.hpp"

namespace accrue::onnx {

std::string Graph::Impl::prefix() const {
  std::string p;
  for (const std::string& s : scope) p += (p.empty() ? "" : ".") + s;
  return p;
}

std::string Graph::Impl::fresh(const std::string& base) {
  const int n = used[base]++;
  return n == 0 ? base : fmt::format("{}_{}", base, n);
}

void Graph::Impl::add_float_initializer(const std::string& name, const std::vector<float>& values,
                                        const std::vector<std::int64_t>& dims) {
  ::onnx::TensorProto* t = graph->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) t->add_dims(d);
  // Little-endian float32 bytes, as ONNX's raw_data stores them (x86-64 and arm64 are).
  t->set_raw_data(values.data(), values.size() * sizeof(float));
}

std::string Graph::Impl::top_layer(std::size_t index, const Layer& layer, const std::vector<std::string>& xs,
                                   LayerRecord& record) {
  scope = {std::to_string(index)};
  recording = &record;
  const std::string y = layer.to_onnx_inputs(owner, xs);
  recording = nullptr;
  scope.clear();
  return y;
}

Graph::Graph(int opset) : impl_(std::make_unique<Impl>(*this)) {
  impl_->opset = opset;
  impl_->graph = impl_->model.mutable_graph();
}

Graph::~Graph() = default;

int Graph::opset() const { return impl_->opset; }

std::vector<std::string> Graph::nodes(std::string_view op, std::vector<std::string> inputs, int outputs,
                                      Attributes attributes) {
  Impl& g = *impl_;
  const std::string base = g.prefix() + "/" + std::string(op);
  ::onnx::NodeProto* n = g.graph->add_node();
  n->set_op_type(std::string(op));
  const std::string name = g.fresh(base);
  n->set_name(name);
  for (const std::string& in : inputs) n->add_input(in);
  std::vector<std::string> names;
  for (int k = 0; k < outputs; ++k) {
    names.push_back(outputs == 1 ? name + "_output" : fmt::format("{}_output_{}", name, k));
    n->add_output(names.back());
  }
  for (auto& [key, value] : attributes) {
    ::onnx::AttributeProto* a = n->add_attribute();
    a->set_name(key);
    std::visit(
        [a](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::int64_t>) {
            a->set_type(::onnx::AttributeProto::INT);
            a->set_i(v);
          } else if constexpr (std::is_same_v<V, float>) {
            a->set_type(::onnx::AttributeProto::FLOAT);
            a->set_f(v);
          } else if constexpr (std::is_same_v<V, std::string>) {
            a->set_type(::onnx::AttributeProto::STRING);
            a->set_s(v);
          } else {
            a->set_type(::onnx::AttributeProto::INTS);
            for (std::int64_t i : v) a->add_ints(i);
          }
        },
        value);
  }
  if (g.recording != nullptr) g.recording->ops.emplace_back(op);
  return names;
}

std::string Graph::node(std::string_view op, std::vector<std::string> inputs, Attributes attributes) {
  return nodes(op, std::move(inputs), 1, std::move(attributes)).front();
}

std::string Graph::weight(std::string_view name, std::vector<float> values, std::vector<std::int64_t> dims) {
  const std::string full = impl_->fresh(impl_->prefix() + "." + std::string(name));
  impl_->add_float_initializer(full, values, dims);
  return full;
}

std::string Graph::weight(std::string_view name, const Tensor& value) {
  std::vector<float> values = value.to_vector<float>();
  const Shape& shape = value.shape();
  return weight(name, std::move(values), std::vector<std::int64_t>(shape.begin(), shape.end()));
}

std::string Graph::weight_transposed(std::string_view name, const Tensor& matrix) {
  ACCRUE_ASSERT(matrix.shape().rank() == 2);
  const std::int64_t rows = matrix.size(0), cols = matrix.size(1);
  const std::vector<float> v = matrix.to_vector<float>();
  std::vector<float> t(v.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) t[static_cast<std::size_t>(c * rows + r)] = v[static_cast<std::size_t>(r * cols + c)];
  return weight(std::string(name) + "_t", std::move(t), {cols, rows});
}

std::string Graph::ints(std::vector<std::int64_t> values) {
  Impl& g = *impl_;
  std::string key = "i";
  for (std::int64_t v : values) key += fmt::format(",{}", v);
  if (auto found = g.constants.find(key); found != g.constants.end()) return found->second;
  const std::string name = g.fresh("const_ints");
  ::onnx::TensorProto* t = g.graph->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims(static_cast<std::int64_t>(values.size()));
  for (std::int64_t v : values) t->add_int64_data(v);
  g.constants.emplace(key, name);
  return name;
}

std::string Graph::scalar(float value) {
  Impl& g = *impl_;
  const std::string key = fmt::format("f{:a}", value);
  if (auto found = g.constants.find(key); found != g.constants.end()) return found->second;
  const std::string name = g.fresh("const_float");
  ::onnx::TensorProto* t = g.graph->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_float_data(value);
  g.constants.emplace(key, name);
  return name;
}

bool Graph::any_image_size(const std::string& x) const { return impl_->any_image_size.contains(x); }

void Graph::set_any_image_size(const std::string& x) { impl_->any_image_size.insert(x); }

std::string Graph::layer(const Layer& inner, const std::string& x) {
  impl_->scope.push_back(inner.name());
  const std::string y = inner.to_onnx(*this, x);
  impl_->scope.pop_back();
  return y;
}

std::string Graph::layer(const Layer& inner, const std::vector<std::string>& xs) {
  impl_->scope.push_back(inner.name());
  const std::string y = inner.to_onnx_inputs(*this, xs);
  impl_->scope.pop_back();
  return y;
}

void Graph::note(std::string text) {
  if (impl_->recording != nullptr) impl_->recording->notes.push_back(std::move(text));
}

}  // namespace accrue::onnx
