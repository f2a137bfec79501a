#pragma once
// Feature normalization with statistics of the training data (Keras's layers.Normalization):
// (x - mean) / max(sqrt(variance), 1e-7), per feature along `axis`, with mean and variance taken
// by adapt() from the data, not learned. They are buffers ("mean", "variance"), so they are saved
// with the weights and travel with the model.
//
//   layers::Normalization norm;
//   norm.adapt(train);                       // the training split only
//   Sequential model{layers::Input{30}, norm, layers::Dense{16}, ...};
//
// On images (C, H, W), `.axis = 0` gives each channel its own.

#include <optional>
#include <vector>

#include "../../datasets/dataset.hpp"
#include "../layer.hpp"

namespace accrue::layers {

struct NormalizationOptions {
  /// The sample dimension whose entries get their own mean and variance (-1: the last, as Keras's
  /// default; 0 for the channels of (C, H, W) images).
  int axis = -1;
  /// Statistics known beforehand (Keras's mean= and variance=), one per feature, in place of
  /// adapt(): `{.axis = 0, .mean = {123.7f, 116.3f, 103.5f}, .variance = {3409.f, 3262.f, 3291.f}}`.
  std::vector<float> mean = {}, variance = {};
  std::string name = {};
};

class Normalization final : public LayerBase<Normalization, "Normalization"> {
 public:
  explicit Normalization(NormalizationOptions options = {});
  LayerConfig config() const override;
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  /// Per channel of images (axis 0 of (C, H, W)), any height and width.
  ImageSizes image_sizes() const override;

  /// Computes mean and variance from every input sample of `data` (read once, batch by batch).
  void adapt(const Dataset& data);
  /// The same from a batch of samples (N, ...).
  void adapt(const Tensor& samples);
  bool adapted() const { return !mean_.empty(); }
  /// Per feature, as adapt() computed them (or as loaded with the weights once built).
  std::vector<float> mean() const;
  std::vector<float> variance() const;

 private:
  void accumulate(const Tensor& batch, std::vector<double>& sum, std::vector<double>& squares, std::int64_t& count) const;
  void set_statistics(const std::vector<double>& sum, const std::vector<double>& squares, std::int64_t count);
  // The shape of the statistics for samples of `sample` shape: 1 except along the axis.
  Shape statistics_shape(const Shape& sample) const;
  int resolved_axis(int rank) const;

  NormalizationOptions options_;
  std::vector<float> mean_, variance_;  // from adapt(), before the layer is built
};

}  // namespace accrue::layers
