#pragma once
// Recomputation (activation checkpointing): a segment of layers whose activations are not kept for
// backward. Its forward pass keeps only the segment's input; backward runs the segment's forward
// again, with its random draws replayed (dropout masks), under the autocast of the first pass, and
// goes backward through that. Gradients are those of the plain layers, bit for bit, for one more
// forward pass of the segment: torch.utils.checkpoint (non-reentrant), Keras's RematScope.
//
//   layers::Recompute{layers::Dense{512}, layers::ReLU{}, layers::Dropout{0.1}}
//
// The inner layers' parameters are named "0.weight", ... as Residual's. In evaluation, and with no
// gradient to compute, the segment runs as plain layers. BatchNorm inside a segment updates its
// running statistics once, in the first pass (ReplayScope).

#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chain.hpp"

namespace accrue {

/// Which layers of a model training recomputes (Sequential::recompute), as Keras's RematScope
/// modes pick them. Each segment keeps only its input and runs again inside its backward, as a
/// layers::Recompute would, without changing the model's layers or their names.
struct RecomputePolicy {
  enum class Mode {
    /// Nothing recomputed.
    none,
    /// Each layer of one of `types` ("TransformerBlock", "Residual") is a segment.
    types,
    /// Consecutive segments of `layers` layers; 0: about sqrt(n) segments of about sqrt(n) layers
    /// (Chen et al. 2016), the last layer left out (its output feeds the loss).
    every,
    /// Each layer that keeps more than `bytes` per sample for backward is a segment.
    larger_than,
  };
  Mode mode = Mode::none;
  std::vector<std::string> types = {};
  std::int64_t layers = 0;
  std::size_t bytes = 0;

  static RecomputePolicy of_types(std::vector<std::string> types) { return {.mode = Mode::types, .types = std::move(types)}; }
  static RecomputePolicy every(std::int64_t layers = 0) { return {.mode = Mode::every, .layers = layers}; }
  static RecomputePolicy larger_than(std::size_t bytes) { return {.mode = Mode::larger_than, .bytes = bytes}; }
  /// "none", "TransformerBlock layers", "every 3 layers", "sqrt(n) segments", "layers keeping over 4 KiB per sample".
  std::string str() const;
};

/// `layers` one after another on x, recomputed in backward: the output's graph is one node that
/// keeps x (and the generator's and autocast's state) and runs the layers again when backward
/// reaches it. The layers must outlive the graph (until backward ran or the output is gone).
Tensor forward_recomputed(std::span<Layer* const> layers, const Tensor& x);

namespace layers {

class Recompute final : public Chain<Recompute, "Recompute"> {
 public:
  using Chain::Chain;
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
};

}  // namespace layers
}  // namespace accrue
