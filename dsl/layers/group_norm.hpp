#pragma once
// Group normalization (nn.GroupNorm): each sample's channels, in groups, normalized by their own
// statistics, so the result does not depend on the batch: the replacement for BatchNorm under
// gradient accumulation with small micro-batches.

#include "../layer.hpp"

namespace accrue::layers {

struct GroupNormOptions {
  float eps = 1e-5f;
  /// Learnable per-channel scale (weight) and shift (bias).
  bool affine = true;
  std::string name = {};
};

class GroupNorm final : public LayerBase<GroupNorm, "GroupNorm"> {
 public:
  /// `groups` groups of channels (the channels are inferred and must divide evenly): `GroupNorm{8}`.
  explicit GroupNorm(std::int64_t groups, GroupNormOptions options = {});
  LayerConfig config() const override;
  /// The layer config() describes (layer_registry.hpp).
  static GroupNorm from_config(const ConfigReader& c);
  std::int64_t groups() const { return groups_; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::int64_t groups_;
  GroupNormOptions options_;
};

}  // namespace accrue::layers
