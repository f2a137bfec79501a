#pragma once
// Layers held one after another inside a layer (Residual's inner layers, a Recompute segment),
// named "0", "1", ... as the children of a PyTorch module holding an nn.Sequential, so that their
// parameters are "0.weight", "1.in_proj_weight", ...

#include <concepts>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../layer.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

/// What `layers` hold in training as one chain, each feeding the next: the tensors between them kept
/// once, the last one's output (when kept) counted in kept_other, their kept packs and deferred
/// gradient rows summed.
LayerMemoryUse chain_memory_use(const std::vector<const Layer*>& layers, const LayerMemoryQuery& q);

/// The same, with what running the chain's backward inside one layer's backward takes (Recompute).
struct ChainMemory {
  LayerMemoryUse use;
  /// The most the layers' backward passes take at once with the gradients between them (not the
  /// chain's own input and output gradients).
  std::size_t inner_backward = 0;
  /// Whether the last layer keeps its output (or its output is a view), and that output's bytes.
  bool last_keeps_output = false;
  std::size_t output_bytes = 0;
};
ChainMemory chain_memory(const std::vector<const Layer*>& layers, const LayerMemoryQuery& q);

/// A layer holding `inner` layers one after another; Residual and Recompute take its constructors.
template <class Derived, LayerTypeName Name>
class Chain : public LayerBase<Derived, Name> {
 public:
  template <class... Ls>
    requires(sizeof...(Ls) > 0 && (std::derived_from<std::decay_t<Ls>, Layer> && ...))
  explicit Chain(Ls&&... inner) {
    std::size_t i = 0;
    (this->add_child(std::to_string(i++), std::forward<Ls>(inner)), ...);
  }
  /// The inner layers as made elsewhere (load_model).
  explicit Chain(std::vector<std::unique_ptr<Layer>> inner) {
    for (std::size_t i = 0; i < inner.size(); ++i) this->add_child(std::to_string(i), std::move(inner[i]));
  }

  std::vector<const Layer*> given_layers() const override {
    std::vector<const Layer*> inner;
    for (std::size_t i = 0; i < this->child_count(); ++i) inner.push_back(&this->child(i));
    return inner;
  }

 protected:
  std::vector<Layer*> inner_layers() {
    std::vector<Layer*> inner;
    for (std::size_t i = 0; i < this->child_count(); ++i) inner.push_back(&this->child(i));
    return inner;
  }
  /// Builds the inner layers in order and returns the last one's output shape.
  Shape build_inner(const Shape& input_shape, Generator& generator) {
    Shape shape = input_shape;
    for (std::size_t i = 0; i < this->child_count(); ++i) shape = this->build_child(i, shape, generator);
    return shape;
  }
  /// The inner layers' ONNX nodes in order; the last one's output.
  std::string inner_to_onnx(onnx::Graph& graph, const std::string& x) const {
    std::string y = x;
    for (std::size_t i = 0; i < this->child_count(); ++i) y = graph.layer(this->child(i), y);
    return y;
  }
};

}  // namespace accrue::layers
