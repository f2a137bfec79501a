// summary(): the Keras table of layers, output shapes and parameters, with parameter memory.

#include <iostream>
#include <sstream>

#include "accrue/dsl/sequential.hpp"

namespace accrue {

namespace {


std::string batch_shape(const Shape& sample) {
  std::string s = "(None";
  for (std::int64_t d : sample) s += fmt::format(", {}", d);
  return s + ")";
}

}  // namespace

std::string Sequential::summary_str() const {
  constexpr int w_layer = 30, w_shape = 20, w_params = 12, w_memory = 12;
  std::string out = fmt::format("Model: \"{}\"\n", name_);
  const std::string rule(w_layer + w_shape + w_params + w_memory + 9, '-');
  out += rule + "\n";
  out += fmt::format(" {:<{}} {:<{}} {:>{}} {:>{}}\n", "Layer (type)", w_layer, "Output Shape", w_shape, "Param #",
                     w_params, "Param memory", w_memory);
  out += rule + "\n";
  std::size_t bytes = 0;
  for (const auto& l : layers_) {
    const std::string shape = l->built() ? batch_shape(l->output_shape()) : "?";
    // Buffers (running statistics) count as non-trainable parameters, as in Keras.
    std::size_t layer_bytes = 0;
    std::int64_t layer_count = 0;
    for (const auto* group : {&l->named_parameters(), &l->named_buffers()})
      for (const auto& p : *group) {
        layer_bytes += p.second.nbytes();
        layer_count += p.second.numel();
      }
    bytes += layer_bytes;
    const std::string params = l->built() ? format_count(layer_count) : "?";
    out += fmt::format(" {:<{}} {:<{}} {:>{}} {:>{}}\n", fmt::format("{} ({})", l->name(), l->type_name()), w_layer,
                       shape, w_shape, params, w_params, l->built() ? format_bytes(layer_bytes) : "?", w_memory);
  }
  out += rule + "\n";
  if (!built_) {
    out += " Not built yet: shapes and parameters appear once the model knows its input sample shape\n"
           " (layers::Input first, model.build(shape), or the first batch of fit).\n";
    return out;
  }
  std::int64_t trainable = 0, frozen = 0;
  std::size_t trainable_bytes = 0;
  for (const auto& [name, p] : named_parameters()) {
    if (p.requires_grad()) {
      trainable += p.numel();
      trainable_bytes += p.nbytes();
    } else {
      frozen += p.numel();
    }
  }
  for (const auto& [name, b] : named_buffers()) frozen += b.numel();
  out += fmt::format(" Total params: {} ({})\n", format_count(trainable + frozen), format_bytes(bytes));
  out += fmt::format(" Trainable params: {} ({})\n", format_count(trainable), format_bytes(trainable_bytes));
  out += fmt::format(" Non-trainable params: {} ({})\n", format_count(frozen), format_bytes(bytes - trainable_bytes));
  if (compiled()) out += fmt::format(" Optimizer: {}, loss: {}\n", recipe_.str(), loss_.name());
  return out;
}

void Sequential::summary(std::ostream& out) const { out << summary_str() << std::flush; }
void Sequential::summary() const { summary(std::cout); }

}  // namespace accrue
