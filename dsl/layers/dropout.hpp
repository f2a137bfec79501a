#pragma once
// Dropout: zeroes each element with probability `rate` in training and scales the rest by
// 1 / (1 - rate); the identity in evaluation. Masks are drawn fresh for every batch.

#include "../layer.hpp"

namespace accrue::layers {

class Dropout final : public LayerBase<Dropout, "Dropout"> {
 public:
  /// Drop probability in [0, 1): `Dropout{0.5}`.
  explicit(false) Dropout(float rate);
  LayerConfig config() const override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
  float rate() const { return rate_; }

 private:
  float rate_;
};

}  // namespace accrue::layers
