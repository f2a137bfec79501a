#pragma once
// A residual connection: y = x + f(x), f being the layers inside, one after another.
//
//   layers::Residual{layers::LayerNorm{}, layers::MultiHeadAttention{4, 128, {.causal = true}}}
//
// The inner layers' parameters are named "0.weight", "1.in_proj_weight", ..., as in a PyTorch
// module holding an nn.Sequential. The inner layers must give back samples of the input's shape.

#include <concepts>
#include <memory>
#include <vector>

#include "accrue/dsl/layer.hpp"

namespace accrue::layers {

/// What `layers` hold in training as one chain, each feeding the next: the tensors between them kept
/// once, the last one's output (when kept) counted in kept_other, as Residual and Recompute hold them.
LayerMemoryUse chain_memory_use(const std::vector<const Layer*>& layers, const LayerMemoryQuery& q);

class Residual final : public LayerBase<Residual> {
 public:
  template <class... Ls>
    requires(sizeof...(Ls) > 0 && (std::derived_from<std::decay_t<Ls>, Layer> && ...))
  explicit Residual(Ls&&... inner) {
    std::size_t i = 0;
    (add_child(std::to_string(i++), std::forward<Ls>(inner)), ...);
  }
  /// The inner layers as made elsewhere (load_model).
  explicit Residual(std::vector<std::unique_ptr<Layer>> inner) {
    for (std::size_t i = 0; i < inner.size(); ++i) add_child(std::to_string(i), std::move(inner[i]));
  }
  std::string type_name() const override { return "Residual"; }
  std::vector<const Layer*> given_layers() const override {
    std::vector<const Layer*> inner;
    for (std::size_t i = 0; i < child_count(); ++i) inner.push_back(&child(i));
    return inner;
  }
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
};

}  // namespace accrue::layers
