#pragma once
// Layer normalization (nn.LayerNorm, Keras's LayerNormalization): each sample normalized over its
// trailing dimensions, then scaled and shifted element-wise. Independent of the batch.

#include "../layer.hpp"

namespace accrue::layers {

struct LayerNormOptions {
  /// How many trailing dimensions of a sample are normalized together: 1 (Keras's default, the
  /// features), or the sample's rank for all of it (PyTorch's LayerNorm([C, H, W])).
  int dims = 1;
  float eps = 1e-5f;
  /// Learnable element-wise scale (weight) and shift (bias) of the normalized shape.
  bool affine = true;
  std::string name = {};
};

class LayerNorm final : public LayerBase<LayerNorm, "LayerNorm"> {
 public:
  explicit LayerNorm(LayerNormOptions options = {});
  LayerConfig config() const override;
  /// The layer config() describes (layer_registry.hpp).
  static LayerNorm from_config(const ConfigReader& c);
  /// The trailing shape normalized over (valid once built).
  const Shape& normalized_shape() const { return normalized_; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  LayerNormOptions options_;
  Shape normalized_;
};

}  // namespace accrue::layers
