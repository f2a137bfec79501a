#pragma once
// Batch normalization, as PyTorch's nn.BatchNorm1d and nn.BatchNorm2d with the channels inferred
// at build. In training each channel is normalized by the statistics of the batch the layer
// sees, which under gradient accumulation is the micro-batch, not the effective batch, and in a
// distributed run this process's share of it unless `.sync = true`: training says so once
// (Layer::uses_batch_statistics). GroupNorm and LayerNorm do not depend on the batch.
// A BatchNorm set not trainable (Layer::trainable(false), Model::freeze) normalizes with its
// running statistics and leaves them as they are, also in training (Keras's rule for fine-tuning:
// a frozen backbone's statistics are those it was trained with, not the new data's).

#include <optional>

#include "../layer.hpp"

namespace accrue::layers {

struct BatchNormOptions {
  /// Weight of the new batch in the running statistics (PyTorch's convention, 0.1); unset keeps
  /// their cumulative average over all batches so far.
  std::optional<float> momentum = 0.1f;
  float eps = 1e-5f;
  /// Learnable per-channel scale (weight) and shift (bias).
  bool affine = true;
  /// Keep running statistics for evaluation; without them evaluation uses the batch's own.
  bool track_running_stats = true;
  /// In a distributed fit, statistics over every process's micro-batch together (PyTorch's
  /// SyncBatchNorm), as one process would compute them on the global micro-batch; alone, the same
  /// as without. Costs five small collective calls per layer and micro-batch (three in forward,
  /// two in backward).
  bool sync = false;
  std::string name = {};
};

/// What BatchNorm1d and BatchNorm2d share; they differ in the sample shapes they take.
class BatchNorm : public Layer {
 public:
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
  bool uses_batch_statistics() const override { return trainable(); }
  bool shares_batch_statistics() const override { return options_.sync; }
  LayerConfig config() const override;
  /// The options config() describes (layer_registry.hpp).
  static BatchNormOptions options_from_config(const ConfigReader& c);

  const BatchNormOptions& options() const { return options_; }
  /// Undefined without track_running_stats.
  Tensor running_mean() const;
  Tensor running_var() const;
  /// Batches seen in training (PyTorch's num_batches_tracked).
  std::int64_t batches_tracked() const { return batches_tracked_; }
  /// Sets that count (load_weights, from PyTorch's num_batches_tracked).
  void set_batches_tracked(std::int64_t count) { batches_tracked_ = count; }
  /// With `on`, starts the running statistics afresh (mean 0, variance 1, no batch tracked) as the
  /// cumulative average of the training batches that follow, whatever the momentum; with `off`,
  /// goes back to the momentum. Sequential::update_batch_norm uses it.
  void recompute_statistics(bool on);

 protected:
  explicit BatchNorm(BatchNormOptions options);
  virtual void check_sample_shape(const Shape& input_shape) const = 0;

 private:
  BatchNormOptions options_;
  std::int64_t batches_tracked_ = 0;
  bool recomputing_ = false;
};

class BatchNorm1d final : public LayerBase<BatchNorm1d, "BatchNorm1d", BatchNorm> {
 public:
  /// Over features (C) or sequences (C, L): `BatchNorm1d{}`, `BatchNorm1d{{.momentum = 0.01f}}`.
  explicit BatchNorm1d(BatchNormOptions options = {}) : LayerBase(std::move(options)) {}

 protected:
  void check_sample_shape(const Shape& input_shape) const override;
};

class BatchNorm2d final : public LayerBase<BatchNorm2d, "BatchNorm2d", BatchNorm> {
 public:
  /// Over images (C, H, W).
  explicit BatchNorm2d(BatchNormOptions options = {}) : LayerBase(std::move(options)) {}

 protected:
  void check_sample_shape(const Shape& input_shape) const override;
};

}  // namespace accrue::layers
