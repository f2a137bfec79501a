#pragma once
// A dataset: N samples, each an input and a target (or several of each, for a model of several
// inputs or outputs), read from a SampleSource (source.hpp). Tensors in memory are one kind; a
// folder of images decoded on demand, a transformed dataset, datasets zipped and a user's own type
// (Dataset::from) are others. Copies are cheap (they share the source); subsets of tensors are
// views.

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "source.hpp"
#include "table_columns.hpp"
#include "../framework/core/tensor.hpp"

namespace accrue {

/// One sample, or one batch of samples: its inputs and its targets, one of each for a model of one
/// input and one output, else one per model input (output), in the model's order.
struct Example {
  std::vector<Tensor> inputs;
  std::vector<Tensor> targets;

  Example() = default;
  /// One input and one target; an undefined target (`{}`) makes a sample of its input alone.
  Example(Tensor input, Tensor target) : inputs{std::move(input)} {
    if (target.defined()) targets.push_back(std::move(target));
  }
  Example(std::vector<Tensor> inputs, std::vector<Tensor> targets)
      : inputs(std::move(inputs)), targets(std::move(targets)) {}
  /// The one input (target); throws ValueError when there are several or none.
  const Tensor& input() const;
  const Tensor& target() const;
};

/// Tensors by name, as a dataset's inputs or targets: `{{"numeric", x}, {"category", c}}`.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

namespace transforms {
class Compose;
}

/// A type of the user's own that Dataset::from reads: size() and get(i), the sample's input and
/// target (or inputs and targets) without a batch dimension (every sample of the same shapes and
/// types).
template <class T>
concept SampleGetter = requires(const T& t, std::int64_t i) {
  { t.size() } -> std::convertible_to<std::int64_t>;
  { t.get(i) } -> std::convertible_to<Example>;
};

class Dataset {
 public:
  Dataset() = default;
  /// Samples as rows of two tensors. Throws ShapeError when they have different numbers of rows.
  /// Undefined targets (`Dataset{x, {}}`) make a dataset of inputs alone (to zip with another).
  Dataset(Tensor inputs, Tensor targets, std::string name = "dataset");
  /// Samples of several inputs or targets, in the model's order (Keras's `fit([x1, x2], [y1, y2])`):
  /// `Dataset{{numeric, category}, {label}}`. No targets make a dataset to predict on.
  Dataset(std::vector<Tensor> inputs, std::vector<Tensor> targets, std::string name = "dataset");
  /// The same by the model's input and output names (Keras's dicts): fit gives each model input
  /// the tensor of its name, whatever the order here.
  Dataset(NamedTensors inputs, NamedTensors targets, std::string name = "dataset");
  explicit Dataset(std::shared_ptr<const SampleSource> source);

  /// The samples of datasets of one size side by side (tf.data's zip): the inputs of the first,
  /// then the second's..., and their targets in the same order. A dataset of inputs only adds
  /// none: `Dataset::zip({images, Dataset{metadata, {}}})`. Throws ValueError for sizes that
  /// differ, naming them; sample weights are not zipped (give them to the result).
  static Dataset zip(const std::vector<Dataset>& parts, std::string name = "");

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
  /// Shape of one input sample (without the batch dimension); throws for several inputs.
  Shape sample_shape() const { return source_ ? source_->layout().input().shape : Shape{}; }
  SampleLayout layout() const { return source_ ? source_->layout() : SampleLayout{}; }
  const SampleSource& source() const;
  /// Whether the samples are tensors in memory (inputs() is then available).
  bool in_memory() const { return source_ && source_->tensors() != nullptr; }

  /// All inputs as one tensor; only for a dataset in memory of one input (throws ValueError
  /// otherwise, saying to read it through a DataLoader or to call to_memory()).
  const Tensor& inputs() const;
  /// All targets as one tensor: the tensor itself in memory, else every sample's target read.
  /// Throws for several targets; target(k) reads one.
  Tensor targets() const;
  /// Every sample's target k (in the layout's order).
  Tensor target(std::size_t k) const;

  /// Sample i as a batch of one (views when in memory).
  Example operator[](std::int64_t i) const;
  /// Samples [begin, end) as a batch (views when in memory).
  Example slice(std::int64_t begin, std::int64_t end, const ReadContext& context = {}) const;
  /// Samples at `indices`, copied into a new batch, in that order.
  Example gather(std::span<const std::int64_t> indices, const ReadContext& context = {}) const;

  /// The same samples with their inputs and targets in another order: input k of the result is
  /// input `inputs[k]` here, target k target `targets[k]` (each index once; parts left out are
  /// dropped). Model::arrange uses it to match a dataset to a model's inputs and outputs.
  Dataset reordered(const std::vector<std::size_t>& inputs, const std::vector<std::size_t>& targets) const;

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
  /// Every sample read once (transforms with context {seed 0, epoch 0}) into tensors.
  Dataset to_memory() const;

  /// The same samples, sample i weighing `weights[i]` in the loss (Keras's sample_weight): fit and
  /// evaluate multiply each sample's loss by its weight and divide the sum by the number of
  /// samples, as Keras does, so a window's loss under accumulation is that of one weighted batch.
  /// Subsets, splits, map() and to_memory() keep each sample's weight. Throws ValueError for a
  /// count other than size(), or a weight that is negative or not finite (naming the sample).
  Dataset with_sample_weights(std::vector<float> weights) const;
  /// The weight of every sample, or null when none were given.
  const std::vector<float>* sample_weights() const { return weights_.get(); }

  /// What the first target's classes 0, 1, ... stand for, where the data knows it (an image
  /// folder's sub-folders, a CSV file's class labels); empty otherwise. Subsets, splits, map() and
  /// to_memory() keep them, and fit gives them to a model that has none (Model::class_names), so
  /// that its file names what it predicts.
  const std::vector<std::string>& class_names() const;
  /// The same samples with these class names.
  Dataset with_class_names(std::vector<std::string> names) const;

  /// Which table columns each input was read from (datasets::csv): one entry per input, empty for
  /// an input that cannot be read again from another file alike (categories numbered by this
  /// file's values); no entries for data not read from a table. Kept as class_names() is; fit gives
  /// them to the model (InputSignature::table).
  const std::vector<std::optional<TableColumns>>& table_columns() const;
  /// The same samples, read from these columns.
  Dataset with_table_columns(std::vector<std::optional<TableColumns>> columns) const;

 private:
  // `samples` held as tensors, named as this dataset's.
  Dataset in_memory_as(Example samples) const;
  // `to` with what this dataset says of its samples: the weights of those at `indices` (to's
  // samples, in order) and the class names.
  Dataset carried_over(Dataset to, std::span<const std::int64_t> indices) const;

  std::shared_ptr<const SampleSource> source_;
  std::shared_ptr<const std::vector<float>> weights_;
  // What the samples stand for, which subsets, splits, map() and to_memory() keep.
  struct Meaning {
    std::vector<std::string> class_names;
    std::vector<std::optional<TableColumns>> table_columns;
  };
  std::shared_ptr<const Meaning> meaning_;
};

namespace detail {
/// Reads samples `indices` of `source` into a new batch counted as data; with `parallel`, over the
/// kernels' threads.
Example read_samples(const SampleSource& source, std::span<const std::int64_t> indices, const ReadContext& context,
                     bool parallel);
/// The one tensor of `tensors` (a sample's inputs or targets, `what` says which); throws
/// ValueError when there are several or none.
const Tensor& only_tensor(const std::vector<Tensor>& tensors, const char* what);
}  // namespace detail

}  // namespace accrue
