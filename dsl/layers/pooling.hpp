#pragma once
// Pooling over (C, H, W) samples: MaxPool2d and AvgPool2d as PyTorch's, and GlobalAvgPool2d, the
// mean of each channel as Keras's GlobalAveragePooling2D (output (C), ready for Dense).

#include "../layer.hpp"
#include "../../framework/ops/ops.hpp"

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

enum class PoolKind { max, average };

/// MaxPool2d and AvgPool2d: one layer over two window functions.
template <PoolKind Kind>
class Pool2d final : public LayerBase<Pool2d<Kind>, Kind == PoolKind::max ? "MaxPool2d" : "AvgPool2d"> {
 public:
  explicit(false) Pool2d(Size2 kernel_size, Pool2dOptions options = {});
  LayerConfig config() const override;
  /// The layer config() describes (layer_registry.hpp).
  static Pool2d from_config(const ConfigReader& c);
  /// The window, its stride (the window's when unset) and padding, as the pooling op takes them.
  const ops::Pool2dOptions& window() const { return options_; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  ops::Pool2dOptions options_;
};
/// Maximum over `kernel_size` windows: `MaxPool2d{2}`, `MaxPool2d{3, {.stride = 2, .padding = 1}}`.
using MaxPool2d = Pool2d<PoolKind::max>;
/// Mean over `kernel_size` windows: `AvgPool2d{2}`.
using AvgPool2d = Pool2d<PoolKind::average>;
extern template class Pool2d<PoolKind::max>;
extern template class Pool2d<PoolKind::average>;

class GlobalAvgPool2d final : public LayerBase<GlobalAvgPool2d, "GlobalAvgPool2d"> {
 public:
  GlobalAvgPool2d() = default;
  /// (C, H, W) -> (C).
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
};

}  // namespace accrue::layers
