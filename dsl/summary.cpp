// summary(): the Keras table of layers, output shapes and parameters, with parameter memory.

#include <algorithm>
#include <iostream>
#include <sstream>

#include "sequential.hpp"

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
std::string parameter_totals(const Sequential& model, std::size_t bytes) {
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

std::string Sequential::summary_str(std::optional<std::int64_t> batch) const {
  constexpr int w_params = 12, w_memory = 12, w_kept = 14;
  // Keras's widths, or wider where a name or a shape needs it, so that the columns stay aligned.
  std::vector<std::string> names, shapes;
  std::size_t w_layer = 30, w_shape = 20;
  std::vector<bool> recomputed(layers_.size(), false);
  for (const auto& [begin, end] : segments_)
    for (std::size_t i = begin; i < end; ++i) recomputed[i] = true;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& l = layers_[i];
    // "dense_1 (Dense) *": recomputed in training (Sequential::recompute).
    names.push_back(fmt::format("{} ({}){}", l->name(), l->type_name(), recomputed[i] ? " *" : ""));
    shapes.push_back(l->built() ? batch_shape(l->output_shape()) : "?");
    w_layer = std::max(w_layer, names.back().size());
    w_shape = std::max(w_shape, shapes.back().size());
  }
  // With a batch size, a column of what each layer keeps for backward at that micro-batch.
  std::optional<MemoryPlan> plan;
  if (batch && built_) plan = memory_plan(*batch);
  const std::string kept_title = plan ? fmt::format("Kept @{}", *batch) : "";
  std::string out = fmt::format("Model: \"{}\"\n", name_);
  const std::string rule(w_layer + w_shape + w_params + w_memory + 9 + (plan ? w_kept + 1 : 0), '-');
  out += rule + "\n";
  out += fmt::format(" {:<{}} {:<{}} {:>{}} {:>{}}", "Layer (type)", w_layer, "Output Shape", w_shape, "Param #",
                     w_params, "Param memory", w_memory);
  if (plan) out += fmt::format(" {:>{}}", kept_title, w_kept);
  out += "\n" + rule + "\n";
  std::size_t bytes = 0;
  for (std::size_t index = 0; index < layers_.size(); ++index) {
    const auto& l = layers_[index];
    const auto [layer_count, layer_bytes] = parameters_of(*l);
    bytes += layer_bytes;
    const std::string params = l->built() ? format_count(layer_count) : "?";
    out += fmt::format(" {:<{}} {:<{}} {:>{}} {:>{}}", names[index], w_layer, shapes[index], w_shape, params, w_params,
                       l->built() ? format_bytes(layer_bytes) : "?", w_memory);
    if (plan) out += fmt::format(" {:>{}}", format_bytes(plan->kept_by_layer[index]), w_kept);
    out += "\n";
  }
  out += rule + "\n";
  if (!built_) {
    out += " Not built yet: shapes and parameters appear once the model knows its input sample shape\n"
           " (layers::Input first, model.build(shape), or the first batch of fit).\n";
    return out;
  }
  out += parameter_totals(*this, bytes);
  if (!segments_.empty())
    out += fmt::format(" * recomputed in backward ({}): {} segment{}\n", recompute_policy_.str(), segments_.size(),
                       segments_.size() == 1 ? "" : "s");
  if (compiled()) out += fmt::format(" Optimizer: {}, loss: {}\n", recipe_.str(), loss_.name());
  if (plan) out += plan->str() + "\n";
  if (!onnx_layers_.empty()) out += OnnxExport{.path = onnx_path_, .layers = onnx_layers_}.str();
  return out;
}

void Sequential::summary(std::ostream& out, std::optional<std::int64_t> batch) const {
  out << summary_str(batch) << std::flush;
}
void Sequential::summary() const { summary(std::cout); }
void Sequential::summary(std::int64_t batch) const { summary(std::cout, batch); }

}  // namespace accrue
