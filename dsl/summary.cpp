// summary(): the Keras table of layers, output shapes and parameters, with parameter memory.

#include <algorithm>
#include <iostream>
#include <sstream>

#include "model.hpp"

namespace accrue {

namespace {


std::string batch_shape(const Shape& sample) {
  std::string s = "(None";
  for (std::int64_t d : sample) s += fmt::format(", {}", d);
  return s + ")";
}

// A layer's parameters and buffers, counted and in bytes: buffers (running statistics) count as
// non-trainable parameters, as in Keras.
std::pair<std::int64_t, std::size_t> parameters_of(const Layer& l) {
  std::int64_t count = 0;
  std::size_t bytes = 0;
  for (const auto* group : {&l.named_parameters(), &l.named_buffers()})
    for (const auto& p : *group) {
      bytes += p.second.nbytes();
      count += p.second.numel();
    }
  return {count, bytes};
}

// Keras's three totals: all, trainable and non-trainable parameters (of `bytes` in all).
std::string parameter_totals(const Model& model, std::size_t bytes) {
  std::int64_t trainable = 0, frozen = 0;
  std::size_t trainable_bytes = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    if (p.requires_grad()) {
      trainable += p.numel();
      trainable_bytes += p.nbytes();
    } else {
      frozen += p.numel();
    }
  }
  for (const auto& [name, b] : model.named_buffers()) frozen += b.numel();
  return fmt::format(" Total params: {} ({})\n", format_count(trainable + frozen), format_bytes(bytes)) +
         fmt::format(" Trainable params: {} ({})\n", format_count(trainable), format_bytes(trainable_bytes)) +
         fmt::format(" Non-trainable params: {} ({})\n", format_count(frozen), format_bytes(bytes - trainable_bytes));
}

}  // namespace

namespace detail {
// A row of summary()'s table.
struct SummaryRow {
  std::string name, shape, params, memory, connected;
  std::size_t kept = 0;
  bool input = false;
};
}  // namespace detail

namespace {
// The table of `rows` with Keras's widths, or wider where a name or a shape needs it, so that the
// columns stay aligned; with `kept_title` a column of what each layer keeps, with `graph` what
// each is connected to.
std::string summary_table(const std::vector<detail::SummaryRow>& rows, const std::string& kept_title, bool graph) {
  constexpr int w_params = 12, w_memory = 12, w_kept = 14;
  const bool kept = !kept_title.empty();
  std::size_t w_layer = 30, w_shape = 20, w_connected = 20;
  for (const detail::SummaryRow& r : rows) {
    w_layer = std::max(w_layer, r.name.size());
    w_shape = std::max(w_shape, r.shape.size());
    w_connected = std::max(w_connected, r.connected.size());
  }
  const std::string rule(w_layer + w_shape + w_params + w_memory + 9 + (kept ? w_kept + 1 : 0) + (graph ? w_connected + 1 : 0),
                         '-');
  std::string out = rule + "\n";
  out += fmt::format(" {:<{}} {:<{}} {:>{}} {:>{}}", "Layer (type)", w_layer, "Output Shape", w_shape, "Param #",
                     w_params, "Param memory", w_memory);
  if (kept) out += fmt::format(" {:>{}}", kept_title, w_kept);
  if (graph) out += fmt::format(" {:<{}}", "Connected to", w_connected);
  while (out.back() == ' ') out.pop_back();
  out += "\n" + rule + "\n";
  for (const detail::SummaryRow& r : rows) {
    out += fmt::format(" {:<{}} {:<{}} {:>{}} {:>{}}", r.name, w_layer, r.shape, w_shape, r.params, w_params, r.memory,
                       w_memory);
    if (kept) out += fmt::format(" {:>{}}", r.input ? std::string("-") : format_bytes(r.kept), w_kept);
    if (graph) out += fmt::format(" {:<{}}", r.connected.empty() ? "-" : r.connected, w_connected);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  }
  return out + rule + "\n";
}
}  // namespace

// A row per layer; a graph that is not a chain gets Keras's functional table: its inputs' rows
// first, and what each layer is connected to ("dense[1][0]": the second call of layer dense).
std::vector<detail::SummaryRow> Model::summary_rows(const MemoryPlan* plan, bool graph) const {
  std::vector<std::size_t> calls(layers_.size(), 0), call_of(nodes_.size());
  std::vector<std::vector<std::size_t>> nodes_of(layers_.size());
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    call_of[k] = calls[nodes_[k].layer]++;
    nodes_of[nodes_[k].layer].push_back(k);
  }
  const auto connection = [&](std::size_t v) {
    if (v < inputs_.size()) return fmt::format("{}[0][0]", inputs_[v].name);
    const std::size_t k = v - inputs_.size();
    return fmt::format("{}[{}][0]", layer_id(*layers_[nodes_[k].layer], keys_[nodes_[k].layer]), call_of[k]);
  };
  std::vector<detail::SummaryRow> rows;
  if (graph)
    for (const GraphInput& in : inputs_)
      rows.push_back({.name = fmt::format("{} (Input)", in.name), .shape = in.shape ? batch_shape(*in.shape) : "?",
                      .params = "0", .memory = format_bytes(0), .input = true});
  std::vector<bool> recomputed(nodes_.size(), false);
  for (const auto& [begin, end] : segments_)
    for (std::size_t k = begin; k < end; ++k) recomputed[k] = true;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = *layers_[i];
    const auto [layer_count, layer_bytes] = parameters_of(l);
    const bool is_recomputed = std::any_of(nodes_of[i].begin(), nodes_of[i].end(), [&](std::size_t k) { return recomputed[k]; });
    // "dense_1 (Dense) *": recomputed in training (Model::recompute).
    detail::SummaryRow row{.name = fmt::format("{} ({}){}", graph ? layer_id(l, keys_[i]) : l.name(), l.type_name(),
                                               is_recomputed ? " *" : ""),
                           .shape = l.built() ? batch_shape(l.output_shape()) : "?",
                           .params = l.built() ? format_count(layer_count) : "?",
                           .memory = l.built() ? format_bytes(layer_bytes) : "?"};
    std::vector<std::string> from;
    for (const std::size_t k : nodes_of[i]) {
      if (plan) row.kept += plan->kept_by_layer[k];
      for (const std::size_t v : nodes_[k].inputs) from.push_back(connection(v));
    }
    row.connected = fmt::format("{}", fmt::join(from, ", "));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string Model::summary_str(std::optional<std::int64_t> batch, const DataParallel& processes) const {
  // With a batch size, a column of what each layer keeps for backward at that micro-batch.
  std::optional<MemoryPlan> plan;
  if (batch && built_) plan = memory_plan(*batch, processes);
  std::size_t bytes = 0;
  for (const auto& l : layers_) bytes += parameters_of(*l).second;
  std::string out = fmt::format("Model: \"{}\"\n", name_);
  out += summary_table(summary_rows(plan ? &*plan : nullptr, !is_chain()), plan ? fmt::format("Kept @{}", *batch) : "",
                       !is_chain());
  if (!built_) {
    out += " Not built yet: shapes and parameters appear once the model knows its input sample shape\n"
           " (layers::Input first, model.build(shape), or the first batch of fit).\n";
    return out;
  }
  out += parameter_totals(*this, bytes);
  if (!segments_.empty())
    out += fmt::format(" * recomputed in backward ({}): {} segment{}\n", recompute_policy_.str(), segments_.size(),
                       segments_.size() == 1 ? "" : "s");
  if (compiled()) out += fmt::format(" Optimizer: {}, loss: {}\n", recipe_.str(), losses_str());
  const std::string lines = signature().str();
  for (std::size_t at = 0, end; (end = lines.find('\n', at)) != std::string::npos; at = end + 1)
    out += " " + lines.substr(at, end - at + 1);
  if (plan) out += plan->str() + "\n";
  if (!onnx_layers_.empty()) out += OnnxExport{.path = onnx_path_, .layers = onnx_layers_}.str();
  return out;
}

void Model::summary(std::ostream& out, std::optional<std::int64_t> batch, const DataParallel& processes) const {
  out << summary_str(batch, processes) << std::flush;
}
void Model::summary() const { summary(std::cout); }
void Model::summary(std::int64_t batch, const DataParallel& processes) const { summary(std::cout, batch, processes); }

}  // namespace accrue
