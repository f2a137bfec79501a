#pragma once
// An in-memory dataset: inputs (N, ...) and targets (N, ...) held as tensors, sample i being row i
// of each. Copies are cheap (they share the tensors); subsets are views.

#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "accrue/framework/tensor.hpp"

namespace accrue {

/// One sample, or one batch of samples.
struct Example {
  Tensor inputs;
  Tensor targets;
};

class Dataset {
 public:
  Dataset() = default;
  /// Throws ShapeError when inputs and targets have different numbers of rows, naming both.
  Dataset(Tensor inputs, Tensor targets, std::string name = "dataset");

  std::int64_t size() const { return inputs_.defined() ? inputs_.size(0) : 0; }
  bool empty() const { return size() == 0; }
  const Tensor& inputs() const { return inputs_; }
  const Tensor& targets() const { return targets_; }
  const std::string& name() const { return name_; }
  /// Shape of one input sample (without the batch dimension).
  Shape sample_shape() const { return inputs_.shape().drop_front(); }

  /// Sample i as a batch of one (views).
  Example operator[](std::int64_t i) const;
  /// Samples [begin, end) as a batch (views, no copy).
  Example slice(std::int64_t begin, std::int64_t end) const;
  /// Samples at `indices`, copied into a new batch, in that order.
  Example gather(std::span<const std::int64_t> indices) const;

  /// The first n samples (or all when there are fewer), as a view.
  Dataset take(std::int64_t n) const;
  /// Samples [begin, end), as a view.
  Dataset subset(std::int64_t begin, std::int64_t end) const;
  /// "crc32 1a2b3c4d": a checksum of every input and target value (and their dtypes and shapes),
  /// which tells two datasets of the same size apart. It reads all the data (about 0.1 s for
  /// FashionMNIST's training set); fit takes it only when it writes or reads checkpoints.
  std::string fingerprint() const;
  /// A random split into (fraction, 1 - fraction) of the samples, reproducible from `seed`.
  std::pair<Dataset, Dataset> split(double fraction, std::uint64_t seed) const;

 private:
  Tensor inputs_, targets_;
  std::string name_;
};

}  // namespace accrue
