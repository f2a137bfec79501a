// A model's graph: made from symbols (the functional API), run batch by batch, called as a layer
// inside another model, and the symbols it hands out for taking parts of it out.

#include <algorithm>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "../framework/core/error.hpp"
#include "layers/recompute.hpp"
#include "model.hpp"

namespace accrue {

namespace {
using detail::SymbolNode;

// The model's layer nodes in an order where each comes after what it reads (depth first from the
// outputs, each node's inputs in order: a chain's own order), found without recursion so that a
// graph of any depth is walked. Throws for an input the model was not given.
std::vector<std::shared_ptr<const SymbolNode>> layer_nodes_in_order(
    const std::vector<Symbol>& outputs, const std::unordered_map<const SymbolNode*, std::size_t>& given_inputs,
    const std::string& model, const std::string& inputs_list) {
  std::vector<std::shared_ptr<const SymbolNode>> order;
  std::unordered_set<const SymbolNode*> done;
  struct Visit {
    std::shared_ptr<const SymbolNode> node;
    std::size_t next = 0;
  };
  for (const Symbol& output : outputs) {
    std::vector<Visit> stack{{output.node()}};
    while (!stack.empty()) {
      Visit& top = stack.back();
      const SymbolNode* node = top.node.get();
      if (node->layer == nullptr) {
        if (!given_inputs.contains(node))
          throw ValueError(fmt::format("model '{}': {} (an output's source) needs {}, which is not among the model's inputs ({})", model,
                                       output.describe(), Symbol(top.node).describe(), inputs_list));
        stack.pop_back();
        continue;
      }
      if (done.contains(node)) {
        stack.pop_back();
        continue;
      }
      if (top.next < node->inputs.size()) {
        std::shared_ptr<const SymbolNode> input = node->inputs[top.next++].node();
        stack.push_back({std::move(input)});
        continue;
      }
      done.insert(node);
      order.push_back(top.node);
      stack.pop_back();
    }
  }
  return order;
}
// For each of the model's `wanted` names, the index of the dataset's part of that name; throws
// naming a name missing or left over. `part` is "input" or "target", `side` the model's "input" or
// "output".
std::vector<std::size_t> match_names(const std::vector<std::string>& wanted, const std::vector<std::string>& given,
                                     const std::string& where, const char* part, const char* side) {
  std::vector<std::size_t> order;
  for (const std::string& name : wanted) {
    const auto at = std::find(given.begin(), given.end(), name);
    ACCRUE_CHECK(at != given.end(), "{}: the samples have no {} named '{}' for the model's {} of that name (they have {})",
                 where, part, name, side, fmt::join(given, ", "));
    order.push_back(static_cast<std::size_t>(at - given.begin()));
  }
  for (const std::string& name : given)
    ACCRUE_CHECK(std::find(wanted.begin(), wanted.end(), name) != wanted.end(),
                 "{}: the samples' {} '{}' is no {} of the model (its {}s: {})", where, part, name, side, side,
                 fmt::join(wanted, ", "));
  return order;
}

}  // namespace

Dataset Model::arrange(const Dataset& data, std::string_view what) const {
  if (data.empty()) return data;  // fit and evaluate say so, naming it
  const SampleLayout l = data.layout();
  const std::string where = fmt::format("{}: model '{}' on dataset '{}'", what, name_, data.name());
  std::vector<std::string> input_names, output_names;
  for (const GraphInput& in : inputs_) input_names.push_back(in.name);
  for (std::size_t o = 0; o < outputs_.size(); ++o) output_names.push_back(output_name(o));
  const auto order = [&](const std::vector<std::string>& wanted, const std::vector<std::string>& names,
                         std::size_t count, const char* part, const char* side) {
    if (!names.empty()) return match_names(wanted, names, where, part, side);
    ACCRUE_CHECK(count == wanted.size(), "{}: the samples have {} {}{}, the model {} {}{} ({})", where, count, part,
                 count == 1 ? "" : "s", wanted.size(), side, wanted.size() == 1 ? "" : "s", fmt::join(wanted, ", "));
    std::vector<std::size_t> in_order(count);
    std::iota(in_order.begin(), in_order.end(), std::size_t{0});
    return in_order;
  };
  const std::vector<std::size_t> inputs = order(input_names, l.input_names, l.inputs.size(), "input", "input");
  const std::vector<std::size_t> targets = order(output_names, l.target_names, l.targets.size(), "target", "output");
  const bool same = std::is_sorted(inputs.begin(), inputs.end()) && std::is_sorted(targets.begin(), targets.end());
  Dataset arranged = same ? data : data.reordered(inputs, targets);
  for (std::size_t k = 0; k < inputs_.size(); ++k) {
    const TensorSpec& spec = l.inputs[inputs[k]];
    if (const std::optional<Shape>& shape = inputs_[k].shape)
      ACCRUE_CHECK_SHAPE(*shape == spec.shape, "{}: the model's input '{}' takes samples of shape {}, the dataset's are {}",
                         where, inputs_[k].name, *shape, spec.shape);
  }
  return arranged;
}

Model::Model(const Symbols& inputs, const Symbols& outputs, ModelOptions options) : Model(std::move(options.name)) {
  set_name(name_);
  ACCRUE_CHECK(!inputs.empty() && !outputs.empty(), "model '{}' needs inputs and outputs: Model{{inputs, outputs}}", name_);
  std::unordered_map<const SymbolNode*, std::size_t> value_of = take_inputs(inputs);
  std::vector<std::string> described;
  for (const GraphInput& in : inputs_) described.push_back(fmt::format("'{}' {}", in.name, *in.shape));
  const std::vector<std::shared_ptr<const SymbolNode>> order =
      layer_nodes_in_order(outputs, value_of, name_, fmt::format("{}", fmt::join(described, ", ")));

  std::unordered_map<const Layer*, std::size_t> layer_of;
  std::vector<bool> read(inputs_.size(), false);
  for (const auto& node : order) {
    GraphNode g;
    for (const Symbol& in : node->inputs) {
      const std::size_t v = value_of.at(in.node().get());
      if (v < inputs_.size()) read[v] = true;
      g.inputs.push_back(v);
    }
    auto [it, added] = layer_of.try_emplace(node->layer.get(), layers_.size());
    if (added) {
      Layer& l = *node->layer;
      adopt(l, node->key);
      keys_.push_back(node->key.empty() ? l.name() : node->key);
      layers_.push_back(node->layer);
    }
    g.layer = it->second;
    value_of[node.get()] = node_value(nodes_.size());
    nodes_.push_back(std::move(g));
  }
  for (const Symbol& out : outputs) {
    const std::size_t v = value_of.at(out.node().get());
    ACCRUE_CHECK(std::find(outputs_.begin(), outputs_.end(), v) == outputs_.end(), "model '{}': {} is given twice among the outputs",
                 name_, out.describe());
    if (v < inputs_.size()) read[v] = true;
    outputs_.push_back(v);
  }
  for (std::size_t i = 0; i < inputs_.size(); ++i)
    ACCRUE_CHECK(read[i], "model '{}': input '{}' {} is not used by any of its outputs", name_, inputs_[i].name,
                 *inputs_[i].shape);
  check_keys();
  for (const auto& layer : layers_) place(*layer);
  symbols_.assign(inputs.begin(), inputs.end());
  for (const auto& node : order) symbols_.emplace_back(node);
  built_ = true;
}

std::unordered_map<const SymbolNode*, std::size_t> Model::take_inputs(const Symbols& inputs) {
  inputs_.clear();
  std::unordered_map<const SymbolNode*, std::size_t> value_of;
  std::set<std::string> taken;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Symbol& in = inputs[i];
    ACCRUE_CHECK(in.node() != nullptr, "model '{}': input {} is a symbol that was moved from", name_, i);
    ACCRUE_CHECK(in.is_input(), "model '{}': input {} is {}, not a layers::Input", name_, i, in.describe());
    ACCRUE_CHECK(!value_of.contains(in.node().get()), "model '{}': {} is given twice among the inputs", name_, in.describe());
    value_of[in.node().get()] = i;
    const std::string& given = in.node()->input_name;
    if (!given.empty()) ACCRUE_CHECK(taken.insert(given).second, "model '{}': two inputs named '{}'", name_, given);
    inputs_.push_back({.name = given, .shape = in.shape(), .dtype = in.dtype()});
  }
  // Unnamed inputs: "input", then "input_1", "input_2", ... skipping names taken.
  int next = 0;
  for (GraphInput& in : inputs_) {
    while (in.name.empty()) {
      const std::string name = next == 0 ? "input" : fmt::format("input_{}", next);
      ++next;
      if (taken.insert(name).second) in.name = name;
    }
  }
  return value_of;
}

// Parameters' names must not collide: a nested model's "encoder.dense" beside a layer's own.
void Model::check_keys() const {
  std::unordered_map<std::string, std::size_t> key_of;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto [it, added] = key_of.try_emplace(keys_[i], i);
    ACCRUE_CHECK(added, "model '{}': {} and {} would both name their parameters '{}.': give the models inside it names of "
                 "their own (set_name, ModelOptions::name)",
                 name_, layers_[it->second]->describe(), layers_[i]->describe(), keys_[i]);
  }
}

void Model::graph_changed() {
  released_after_.clear();
  symbols_.clear();
}

void Model::index_graph() const {
  if (!released_after_.empty() || nodes_.empty()) return;
  std::vector<std::size_t> last(inputs_.size() + nodes_.size(), nodes_.size());
  std::vector<bool> is_output(last.size(), false);
  for (const std::size_t v : outputs_) is_output[v] = true;
  for (std::size_t k = 0; k < nodes_.size(); ++k)
    for (const std::size_t v : nodes_[k].inputs) last[v] = k;
  released_after_.assign(nodes_.size(), {});
  for (std::size_t v = 0; v < last.size(); ++v)
    if (!is_output[v] && last[v] < nodes_.size()) released_after_[last[v]].push_back(v);
}

bool Model::is_chain() const {
  if (inputs_.size() != 1 || outputs_.size() != 1 || nodes_.empty() || outputs_[0] != node_value(nodes_.size() - 1))
    return false;
  for (std::size_t k = 0; k < nodes_.size(); ++k)
    if (nodes_[k].inputs.size() != 1 || nodes_[k].inputs[0] != (k == 0 ? 0 : node_value(k - 1))) return false;
  return true;
}

Shape Model::value_shape(std::size_t value) const {
  if (value < inputs_.size()) return *inputs_[value].shape;
  return layers_[nodes_[value - inputs_.size()].layer]->output_shape();
}

std::string Model::value_str(std::size_t value) const {
  if (value < inputs_.size()) return fmt::format("input '{}'", inputs_[value].name);
  const std::size_t l = nodes_[value - inputs_.size()].layer;
  return fmt::format("'{}' ({})", layer_id(*layers_[l], keys_[l]), layers_[l]->type_name());
}

std::vector<Tensor> Model::run_graph(std::vector<Tensor> values) {
  index_graph();
  values.resize(inputs_.size() + nodes_.size());
  auto segment = segments_.begin();
  for (std::size_t k = 0; k < nodes_.size();) {
    const GraphNode& node = nodes_[k];
    Layer& l = *layers_[node.layer];
    std::vector<Tensor> xs;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      xs.push_back(values[node.inputs[i]]);
      const Shape in = xs.back().shape().drop_front();
      // A layer that takes images of any size gets them where the model's input takes them.
      const Shape& built = l.input_shapes()[i];
      const auto image_of_other_size = [&] {
        return l.image_sizes() != Layer::ImageSizes::fixed && in.rank() == 3 && built.rank() == 3 && in[0] == built[0];
      };
      if (!(in == built) && !image_of_other_size())
        throw ShapeError(fmt::format("layer {} '{}' ({}) expects samples of shape {} but gets {} (batch {}) from {}", k,
                                     l.name(), l.type_name(), l.input_shapes()[i], in, xs.back().shape(),
                                     value_str(node.inputs[i])));
    }
    // A recomputed segment (recompute()), a chain inside the graph, runs as one in training.
    const bool starts_segment = segment != segments_.end() && segment->first == k;
    const bool recomputed = starts_segment && l.training();
    const std::size_t end = recomputed ? segment->second : k + 1;
    if (starts_segment) ++segment;
    try {
      if (recomputed) {
        std::vector<Layer*> inner;
        for (std::size_t j = k; j < end; ++j) inner.push_back(layers_[nodes_[j].layer].get());
        values[node_value(end - 1)] = forward_recomputed(inner, xs[0]);
      } else {
        values[node_value(k)] = l.forward_inputs(xs);
      }
    } catch (Error& e) {
      std::vector<std::string> shapes;
      for (const Tensor& x : xs) shapes.push_back(x.shape().str());
      e.prepend(recomputed ? fmt::format("layers {} to {} '{}' to '{}' (recomputed), input {}: ", k, end - 1, l.name(),
                                         layers_[nodes_[end - 1].layer]->name(), xs[0].shape())
                           : fmt::format("layer {} '{}' ({}), input{} {}: ", k, l.name(), l.type_name(),
                                         xs.size() == 1 ? "" : "s", fmt::join(shapes, " and ")));
      throw;
    }
    for (std::size_t j = k; j < end; ++j)
      for (const std::size_t v : released_after_[j]) values[v] = Tensor();
    k = end;
  }
  return values;
}

std::string Model::wiring() const {
  std::string out;
  for (const GraphInput& in : inputs_) out += fmt::format("input '{}' {}; ", in.name, in.shape ? in.shape->str() : "?");
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    std::vector<std::string> from;
    for (const std::size_t v : nodes_[k].inputs) from.push_back(v < inputs_.size() ? value_str(v) : fmt::format("node {}", v - inputs_.size()));
    out += fmt::format("node {} {} <- {}; ", k, value_str(node_value(k)), fmt::join(from, ", "));
  }
  std::vector<std::string> outs;
  for (const std::size_t v : outputs_) outs.push_back(v < inputs_.size() ? value_str(v) : fmt::format("node {}", v - inputs_.size()));
  return out + fmt::format("outputs {}", fmt::join(outs, ", "));
}

std::string Model::output_name(std::size_t i) const {
  const std::size_t v = outputs_.at(i);
  if (v < inputs_.size()) return inputs_[v].name;
  const std::size_t l = nodes_[v - inputs_.size()].layer;
  return layer_id(*layers_[l], keys_[l]);
}

Symbol Model::input(std::size_t i) const {
  ACCRUE_CHECK(i < inputs_.size(), "model '{}' has {} inputs, not {}", name_, inputs_.size(), i + 1);
  return symbols().at(i);
}

Symbol Model::output(std::size_t i) const {
  ACCRUE_CHECK(i < outputs_.size(), "model '{}' has {} outputs, not {}", name_, outputs_.size(), i + 1);
  return symbols().at(outputs_[i]);
}

Symbol Model::output_of(const std::string& name) const {
  const Layer& wanted = layer(name);
  for (std::size_t k = 0; k < nodes_.size(); ++k)
    if (layers_[nodes_[k].layer].get() == &wanted) return symbols().at(node_value(k));
  throw ValueError(fmt::format("model '{}': layer '{}' is not called in its graph", name_, name));
}

// The graph's values as symbols: the ones the model was made of (a functional model), or for a
// Sequential ones made now by calling its layers on fresh inputs, under its own parameter names.
const std::vector<Symbol>& Model::symbols() const {
  if (!symbols_.empty()) return symbols_;
  ACCRUE_CHECK(built_, "model '{}' is not built yet: its inputs' shapes are not known (layers::Input, build(shape))", name_);
  std::vector<Symbol> made;
  for (const GraphInput& in : inputs_) made.push_back(layers::Input(*in.shape, {.name = in.name, .dtype = in.dtype}));
  for (const GraphNode& node : nodes_) {
    std::vector<Symbol> xs;
    for (const std::size_t v : node.inputs) xs.push_back(made[v]);
    made.push_back(detail::call_layer(layers_[node.layer], xs, keys_[node.layer]));
  }
  symbols_ = std::move(made);
  return symbols_;
}

Symbol Model::operator()(const Symbols& inputs) {
  ACCRUE_CHECK(outputs_.size() == 1, "model '{}' has {} outputs: call(inputs) gives them all", name_, outputs_.size());
  return call(inputs).front();
}

std::vector<Symbol> Model::call(const Symbols& inputs) {
  ACCRUE_CHECK(inputs.size() == inputs_.size(), "model '{}' takes {} input{}, called on {}", name_, inputs_.size(),
               inputs_.size() == 1 ? "" : "s", inputs.size());
  if (!built_) build(inputs.front().shape());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    ACCRUE_CHECK_SHAPE(inputs[i].shape() == *inputs_[i].shape, "model '{}' takes samples of shape {} at input '{}', called on {}",
                       name_, *inputs_[i].shape, inputs_[i].name, inputs[i].describe());
  std::vector<Symbol> values(inputs.begin(), inputs.end());
  for (const GraphNode& node : nodes_) {
    std::vector<Symbol> xs;
    for (const std::size_t v : node.inputs) xs.push_back(values[v]);
    values.push_back(detail::call_layer(layers_[node.layer], xs, name_ + "." + keys_[node.layer]));
  }
  std::vector<Symbol> out;
  for (const std::size_t v : outputs_) out.push_back(values[v]);
  return out;
}

}  // namespace accrue
