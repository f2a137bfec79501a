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

#include "chain.hpp"

namespace accrue::layers {

class Residual final : public Chain<Residual, "Residual"> {
 public:
  using Chain::Chain;
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
};

}  // namespace accrue::layers
