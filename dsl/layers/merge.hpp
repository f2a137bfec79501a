#pragma once
// Keras's merge layers: one output from two or more inputs, called on symbols of a functional
// model (model.hpp): `Symbol y = layers::Add{}({x, shortcut});`.
//
// Add, Subtract, Multiply, Average, Maximum and Minimum work element by element on inputs of one
// sample shape, or of shapes that broadcast together as NumPy's do (a (1, 8) beside a (5, 8));
// Subtract takes exactly two. Maximum and Minimum pass the gradient to the larger (smaller) input,
// halved between equal ones, as torch.maximum does. Concatenate joins inputs along one axis.

#include <string>

#include "../layer.hpp"

namespace accrue::layers {

struct MergeOptions {
  /// Name in summaries, logs and errors; empty gives "add", "add_1", ...
  std::string name = {};
};

/// What the element-wise merges share: the check of the inputs' shapes, and the fold over them of
/// one function of two tensors, written to ONNX as one operator of any number of inputs.
class ElementwiseMerge : public MultiInputLayer {
 public:
  using Combine = Tensor (*)(const Tensor&, const Tensor&);
  InputCount input_count() const override;
  Shape build(const std::vector<Shape>& input_shapes, Generator& generator) override;
  Tensor forward(const std::vector<Tensor>& xs) override;
  std::string to_onnx_inputs(onnx::Graph& graph, const std::vector<std::string>& xs) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 protected:
  ElementwiseMerge(const MergeOptions& options, Combine combine, const char* onnx_op);

 private:
  Combine combine_;
  const char* onnx_op_;
};

class Add final : public LayerBase<Add, "Add", ElementwiseMerge> {
 public:
  explicit Add(MergeOptions options = {});
};

/// Its first input minus its second.
class Subtract final : public LayerBase<Subtract, "Subtract", ElementwiseMerge> {
 public:
  explicit Subtract(MergeOptions options = {});
  InputCount input_count() const override { return {2, 2}; }
};

class Multiply final : public LayerBase<Multiply, "Multiply", ElementwiseMerge> {
 public:
  explicit Multiply(MergeOptions options = {});
};

/// The inputs' sum divided by how many there are.
class Average final : public LayerBase<Average, "Average", ElementwiseMerge> {
 public:
  explicit Average(MergeOptions options = {});
  Tensor forward(const std::vector<Tensor>& xs) override;
};

class Maximum final : public LayerBase<Maximum, "Maximum", ElementwiseMerge> {
 public:
  explicit Maximum(MergeOptions options = {});
};

class Minimum final : public LayerBase<Minimum, "Minimum", ElementwiseMerge> {
 public:
  explicit Minimum(MergeOptions options = {});
};

struct ConcatenateOptions {
  /// The axis of the batch tensor to join along, as Keras counts it: -1 the last, 1 the first
  /// after the batch (0, the batch itself, is refused).
  int axis = -1;
  std::string name = {};
};

/// The inputs joined along one axis (the same shape elsewhere), as keras.layers.Concatenate and
/// torch.cat: `Concatenate{}({a, b})`, `Concatenate{{.axis = 1}}({image_features, table})`.
class Concatenate final : public LayerBase<Concatenate, "Concatenate", MultiInputLayer> {
 public:
  explicit Concatenate(ConcatenateOptions options = {});

  LayerConfig config() const override;
  static Concatenate from_config(const ConfigReader& c);
  int axis() const { return options_.axis; }

  InputCount input_count() const override;
  Shape build(const std::vector<Shape>& input_shapes, Generator& generator) override;
  Tensor forward(const std::vector<Tensor>& xs) override;
  std::string to_onnx_inputs(onnx::Graph& graph, const std::vector<std::string>& xs) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  // The axis of the batch tensor, from 1 (valid once built).
  int batch_axis_ = 1;
  ConcatenateOptions options_;
};

}  // namespace accrue::layers
