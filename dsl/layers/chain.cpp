#include "chain.hpp"

#include <algorithm>

namespace accrue::layers {

// A tensor between two of the layers is kept once when either keeps it; the last one's output, when
// it keeps it, is counted in kept_other.
ChainMemory chain_memory(const std::vector<const Layer*>& layers, const LayerMemoryQuery& q) {
  ChainMemory chain;
  LayerMemoryUse& total = chain.use;
  total = {.output_dtype = DType::f32, .keeps_input = false, .keeps_output = false};
  LayerMemoryQuery at = q;
  bool previous_keeps_output = false;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerMemoryUse u = layers[i]->memory_use(at);
    if (i == 0) total.keeps_input = u.keeps_input;
    else if (!u.output_is_view && (u.keeps_input || previous_keeps_output))
      total.kept_other += at.input_bytes();
    total.kept_other += u.kept_other;
    // Packs for the input's gradient: the chain's input may need none, an inner layer's always does.
    total.kept_packs += u.kept_packs + (i > 0 ? u.kept_packs_for_input_gradient : 0);
    if (i == 0) total.kept_packs_for_input_gradient = u.kept_packs_for_input_gradient;
    total.deferred_gradient_rows += u.deferred_gradient_rows;
    const Shape out = layers[i]->output_shape();
    const std::size_t out_bytes = at.bytes(out, u.output_dtype);
    total.forward_scratch = std::max(total.forward_scratch, u.forward_scratch + out_bytes);
    total.backward_scratch = std::max(total.backward_scratch, u.backward_scratch + at.input_bytes());
    chain.inner_backward = std::max(chain.inner_backward, u.scratch_with_input_gradient() + (i > 0 ? at.input_bytes() : 0) +
                                                              (i + 1 < layers.size() ? out_bytes : 0));
    previous_keeps_output = u.keeps_output;
    chain.last_keeps_output = u.keeps_output || u.output_is_view;
    chain.output_bytes = out_bytes;
    total.output_dtype = u.output_dtype;
    at.input_shape = out;
    at.input_dtype = u.output_dtype;
  }
  if (previous_keeps_output) total.kept_other += at.input_bytes();
  return chain;
}

LayerMemoryUse chain_memory_use(const std::vector<const Layer*>& layers, const LayerMemoryQuery& q) {
  return chain_memory(layers, q).use;
}

}  // namespace accrue::layers
