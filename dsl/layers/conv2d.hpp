#pragma once
// 2-D convolution over (C, H, W) samples: PyTorch's nn.Conv2d with the input channels inferred at
// build, as Keras's Conv2D infers them. NCHW, as in PyTorch.

#include <optional>

#include "../layer.hpp"
#include "../../framework/ops/ops.hpp"

namespace accrue::layers {

/// Zero padding per axis, or `same`: the output keeps the input's height and width (stride 1 and
/// an odd dilated kernel only, so that the padding is symmetric).
struct Padding {
  constexpr Padding(std::int64_t both) : size(both) {}  // NOLINT: `.padding = 1`
  constexpr Padding(std::int64_t height, std::int64_t width) : size(height, width) {}
  constexpr Padding(Size2 s) : size(s) {}  // NOLINT
  static constexpr Padding same_size() {
    Padding p{0};
    p.same = true;
    return p;
  }
  Size2 size;
  bool same = false;
};
/// `Conv2d{32, 3, {.padding = layers::same}}`.
inline constexpr Padding same = Padding::same_size();

struct Conv2dOptions {
  Size2 stride = 1;
  Padding padding = 0;
  Size2 dilation = 1;
  /// Input and output channels split into this many independent groups (= channels: depthwise).
  std::int64_t groups = 1;
  bool bias = true;
  /// Name in summaries and errors; empty gives "conv2d", "conv2d_1", ...
  std::string name = {};
};

class Conv2d final : public LayerBase<Conv2d, "Conv2d"> {
 public:
  /// `filters` output channels with a `kernel_size` window: `Conv2d{32, 3}`,
  /// `Conv2d{64, {3, 5}, {.stride = 2, .padding = 1}}`.
  Conv2d(std::int64_t filters, Size2 kernel_size, Conv2dOptions options = {});

  LayerConfig config() const override;
  /// The layer config() describes (layer_registry.hpp).
  static Conv2d from_config(const ConfigReader& c);
  std::int64_t filters() const { return filters_; }
  Size2 kernel_size() const { return kernel_; }
  /// The padding applied (what `same` resolved to once built).
  Size2 padding() const { return padding_; }
  const Tensor& weight() const { return named_parameters().at(0).second; }
  Tensor bias() const { return options_.bias ? named_parameters().at(1).second : Tensor(); }

  /// weight (filters, C / groups, kh, kw) and bias (filters), uniform in +-1/sqrt(fan_in) with
  /// fan_in = C / groups * kh * kw: PyTorch's default initialisation.
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  ops::Conv2dOptions op_options() const;

  std::int64_t filters_;
  Size2 kernel_;
  Conv2dOptions options_;
  Size2 padding_ = 0;
};

}  // namespace accrue::layers
