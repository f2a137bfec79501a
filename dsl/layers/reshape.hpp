#pragma once
// Reshaping and slicing each sample, as a graph needs between layers (the functional API): Keras's
// Reshape, and a slice of one axis, which Keras writes with a Lambda and PyTorch with x[:, a:b].

#include <cstdint>
#include <string>
#include <vector>

#include "../layer.hpp"

namespace accrue::layers {

struct ReshapeOptions {
  std::string name = {};
};

/// Each sample reshaped to `shape` (without the batch dimension), one entry -1 standing for what
/// is left, as keras.layers.Reshape((4, -1)): `Reshape{{4, -1}}(x)`. Throws ShapeError at build
/// when the sample's values do not fill the shape, naming both.
class Reshape final : public LayerBase<Reshape, "Reshape"> {
 public:
  explicit Reshape(std::vector<std::int64_t> shape, ReshapeOptions options = {});

  LayerConfig config() const override;
  static Reshape from_config(const ConfigReader& c);

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  std::vector<std::int64_t> shape_;
  Shape resolved_;  // the shape with -1 worked out (valid once built)
};

struct SliceOptions {
  /// The axis of the batch tensor, as Keras counts it: -1 the last, 1 the first after the batch.
  int axis = -1;
  /// Entries [begin, end) of that axis.
  std::int64_t begin = 0, end = 1;
  std::string name = {};
};

/// Entries [begin, end) of one axis of each sample: `Slice{{.axis = -1, .begin = 0, .end = 4}}(x)`
/// is x[..., 0:4]. Throws ShapeError at build for an axis or a range the samples do not have.
class Slice final : public LayerBase<Slice, "Slice"> {
 public:
  explicit Slice(SliceOptions options);

  LayerConfig config() const override;
  static Slice from_config(const ConfigReader& c);
  const SliceOptions& options() const { return options_; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  SliceOptions options_;
  int batch_axis_ = 1;  // valid once built
};

}  // namespace accrue::layers
