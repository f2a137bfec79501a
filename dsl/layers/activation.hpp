#pragma once
// Activation layers: element-wise functions without parameters, and softmax.

#include "../layer.hpp"

namespace accrue::layers {

class ReLU final : public LayerBase<ReLU, "ReLU"> {
 public:
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
};

struct GELUOptions {
  /// PyTorch's approximate="tanh"; the exact erf form by default.
  bool tanh_approximation = false;
};

class GELU final : public LayerBase<GELU, "GELU"> {
 public:
  explicit(false) GELU(GELUOptions options = {}) : options_(options) {}
  LayerConfig config() const override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  GELUOptions options_;
};

class Sigmoid final : public LayerBase<Sigmoid, "Sigmoid"> {
 public:
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
};

class Tanh final : public LayerBase<Tanh, "Tanh"> {
 public:
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
};

/// Softmax over one dimension of the sample (the last by default). Put it after the last Dense
/// for probabilities at prediction time; losses::CrossEntropy wants the logits before it.
class Softmax final : public LayerBase<Softmax, "Softmax"> {
 public:
  explicit(false) Softmax(int dim = -1) : dim_(dim) {}
  LayerConfig config() const override;
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  int dim_;
};

/// GELU's ONNX nodes (opset 17 has no Gelu): the erf form, or the tanh approximation; for the
/// layers that apply GELU inside themselves (TransformerBlock).
std::string gelu_to_onnx(onnx::Graph& graph, const std::string& x, bool tanh_approximation);

}  // namespace accrue::layers
