#pragma once
// Dense (fully connected) layer: y = x W^T + b over the last dimension, as PyTorch's nn.Linear
// and Keras's Dense. The input size is inferred at build.

#include "../layer.hpp"

namespace accrue::layers {

struct DenseOptions {
  bool bias = true;
  /// Name in summaries and errors; empty gives "dense", "dense_1", ...
  std::string name = {};
};

class Dense final : public LayerBase<Dense, "Dense"> {
 public:
  /// `units` output features: `Dense{512}`, `Dense{10, {.bias = false}}`.
  explicit(false) Dense(std::int64_t units, DenseOptions options = {});

  LayerConfig config() const override;
  /// The layer config() describes (layer_registry.hpp).
  static Dense from_config(const ConfigReader& c);
  std::int64_t units() const { return units_; }
  const Tensor& weight() const { return named_parameters().at(0).second; }
  /// Undefined without bias.
  Tensor bias() const { return options_.bias ? named_parameters().at(1).second : Tensor(); }

  /// W is (units, in_features) and b (units), both uniform in +-1/sqrt(in_features): PyTorch's
  /// default initialisation of nn.Linear (Kaiming uniform with a = sqrt(5)).
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::int64_t units_;
  DenseOptions options_;
};

}  // namespace accrue::layers
