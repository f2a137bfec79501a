#include "dropout.hpp"

#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

Dropout::Dropout(float rate) : rate_(rate) {
  ACCRUE_CHECK(rate >= 0.0f && rate < 1.0f, "Dropout rate must be in [0, 1), got {}", rate);
}

Tensor Dropout::forward(const Tensor& x) { return ops::dropout(x, rate_, training(), &generator()); }

// The mask is drawn again in backward from the same Philox counter, so nothing is kept.
LayerMemoryUse Dropout::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = q.input_dtype, .output_is_view = rate_ == 0.0f, .keeps_input = false, .keeps_output = false};
}

LayerConfig Dropout::config() const { return {{"rate", float_option(rate_)}}; }

// Inference: the identity, no node.
std::string Dropout::to_onnx(onnx::Graph&, const std::string& x) const { return x; }

}  // namespace accrue::layers
