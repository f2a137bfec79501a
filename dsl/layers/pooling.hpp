#pragma once
// Pooling over (C, H, W) samples: MaxPool2d and AvgPool2d as PyTorch's, and GlobalAvgPool2d, the
// mean of each channel as Keras's GlobalAveragePooling2D (output (C), ready for Dense).

#include "accrue/dsl/layer.hpp"
#include "accrue/framework/ops.hpp"

namespace accrue::layers {

struct Pool2dOptions {
  /// Step between windows; the window size when unset (PyTorch's default).
  std::optional<Size2> stride = std::nullopt;
  /// Zero padding, at most half the window; padding never wins a max window.
  Size2 padding = 0;
  /// AvgPool2d: whether padded positions count in the divisor (PyTorch's default: yes).
  bool count_include_pad = true;
  std::string name = {};
};

class MaxPool2d final : public LayerBase<MaxPool2d> {
 public:
  /// Maximum over `kernel_size` windows: `MaxPool2d{2}`, `MaxPool2d{3, {.stride = 2, .padding = 1}}`.
  explicit(false) MaxPool2d(Size2 kernel_size, Pool2dOptions options = {});
  std::string type_name() const override { return "MaxPool2d"; }
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  ops::Pool2dOptions options_;
};

class AvgPool2d final : public LayerBase<AvgPool2d> {
 public:
  /// Mean over `kernel_size` windows.
  explicit(false) AvgPool2d(Size2 kernel_size, Pool2dOptions options = {});
  std::string type_name() const override { return "AvgPool2d"; }
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  ops::Pool2dOptions options_;
};

class GlobalAvgPool2d final : public LayerBase<GlobalAvgPool2d> {
 public:
  GlobalAvgPool2d() = default;
  std::string type_name() const override { return "GlobalAvgPool2d"; }
  /// (C, H, W) -> (C).
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
};

}  // namespace accrue::layers
