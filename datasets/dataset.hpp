#pragma once
// A dataset: N samples, each an input and a target, read from a SampleSource (source.hpp). Two
// tensors in memory are one kind; a folder of images decoded on demand, a transformed dataset and
// a user's own type (Dataset::from) are others. Copies are cheap (they share the source); subsets
// of tensors are views.

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "source.hpp"
#include "../framework/core/tensor.hpp"

namespace accrue {

/// One sample, or one batch of samples.
struct Example {
  Tensor inputs;
  Tensor targets;
};

namespace transforms {
class Compose;
}

/// A type of the user's own that Dataset::from reads: size() and get(i), the sample's input and
/// target without a batch dimension (every sample of the same shape and type).
template <class T>
concept SampleGetter = requires(const T& t, std::int64_t i) {
  { t.size() } -> std::convertible_to<std::int64_t>;
  { t.get(i) } -> std::convertible_to<Example>;
};

class Dataset {
 public:
  Dataset() = default;
  /// Samples as rows of two tensors. Throws ShapeError when they have different numbers of rows.
  Dataset(Tensor inputs, Tensor targets, std::string name = "dataset");
  explicit Dataset(std::shared_ptr<const SampleSource> source);

  /// A dataset of the user's own: `get(i)` returns sample i's input and target (no batch
  /// dimension). get() is called from the loader's background threads, several at once.
  static Dataset from(std::int64_t size, std::function<Example(std::int64_t)> get, std::string name = "dataset");
  template <SampleGetter T>
  static Dataset from(T data, std::string name = "dataset") {
    auto shared = std::make_shared<const T>(std::move(data));
    return from(static_cast<std::int64_t>(shared->size()), [shared](std::int64_t i) { return Example(shared->get(i)); },
                std::move(name));
  }

  std::int64_t size() const { return source_ ? source_->size() : 0; }
  bool empty() const { return size() == 0; }
  std::string name() const { return source_ ? source_->name() : std::string{"dataset"}; }
  /// Shape of one input sample (without the batch dimension).
  Shape sample_shape() const { return source_ ? source_->layout().input.shape : Shape{}; }
  SampleLayout layout() const { return source_ ? source_->layout() : SampleLayout{}; }
  const SampleSource& source() const;
  /// Whether the samples are two tensors in memory (inputs() is then available).
  bool in_memory() const { return source_ && source_->tensors() != nullptr; }

  /// All inputs as one tensor; only for a dataset in memory (throws ValueError otherwise, saying
  /// to read it through a DataLoader or to call to_memory()).
  const Tensor& inputs() const;
  /// All targets as one tensor: the tensor itself in memory, else every sample's target read.
  Tensor targets() const;

  /// Sample i as a batch of one (views when in memory).
  Example operator[](std::int64_t i) const;
  /// Samples [begin, end) as a batch (views when in memory).
  Example slice(std::int64_t begin, std::int64_t end, const ReadContext& context = {}) const;
  /// Samples at `indices`, copied into a new batch, in that order.
  Example gather(std::span<const std::int64_t> indices, const ReadContext& context = {}) const;

  /// The first n samples (or all when there are fewer).
  Dataset take(std::int64_t n) const;
  /// Samples [begin, end).
  Dataset subset(std::int64_t begin, std::int64_t end) const;
  /// The samples at `indices`, in that order.
  Dataset select(std::vector<std::int64_t> indices) const;
  /// "crc32 1a2b3c4d": tells two datasets of the same size apart. In memory it reads every value
  /// (about 0.1 s for FashionMNIST's training set); a folder of images hashes its file names and
  /// sizes. fit takes it only when it writes or reads checkpoints or runs on several processes.
  std::string fingerprint() const;
  /// A random split into (fraction, 1 - fraction) of the samples, reproducible from `seed`.
  std::pair<Dataset, Dataset> split(double fraction, std::uint64_t seed) const;
  /// Every sample passed through `pipeline`, its randomness drawn from (seed, epoch, sample index,
  /// transform) as transforms.hpp explains.
  Dataset map(const transforms::Compose& pipeline) const;
  /// Every sample read once (transforms with context {seed 0, epoch 0}) into two tensors.
  Dataset to_memory() const;

  /// The same samples, sample i weighing `weights[i]` in the loss (Keras's sample_weight): fit and
  /// evaluate multiply each sample's loss by its weight and divide the sum by the number of
  /// samples, as Keras does, so a window's loss under accumulation is that of one weighted batch.
  /// Subsets, splits, map() and to_memory() keep each sample's weight. Throws ValueError for a
  /// count other than size(), or a weight that is negative or not finite (naming the sample).
  Dataset with_sample_weights(std::vector<float> weights) const;
  /// The weight of every sample, or null when none were given.
  const std::vector<float>* sample_weights() const { return weights_.get(); }

 private:
  // `to` with this dataset's weights of the samples at `indices` (to's samples, in order).
  Dataset weighted_like(Dataset to, std::span<const std::int64_t> indices) const;

  std::shared_ptr<const SampleSource> source_;
  std::shared_ptr<const std::vector<float>> weights_;
};

namespace detail {
/// Reads samples `indices` of `source` into a new batch counted as data; with `parallel`, over the
/// kernels' threads.
Example read_samples(const SampleSource& source, std::span<const std::int64_t> indices, const ReadContext& context,
                     bool parallel);
}  // namespace detail

}  // namespace accrue
