#pragma once
// Flattens each sample to one dimension: (B, 1, 28, 28) -> (B, 784).

#include "../layer.hpp"

namespace accrue::layers {

class Flatten final : public LayerBase<Flatten, "Flatten"> {
 public:
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
};

}  // namespace accrue::layers
