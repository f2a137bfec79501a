#pragma once
// Where a Dataset's samples come from: a random-access source of samples that need not be in
// memory. Tensors held in memory are one kind (TensorSource), a folder of images decoded on demand
// another, a user's own type a third (Dataset::from). A loader asks a source for the samples of a
// batch, on background threads when the source is not in memory (batch_queue.hpp), so read() must
// be safe to call from several threads at once.
//
// A sample depends on (context.seed, context.epoch, i) only: transforms draw their randomness from
// those (transforms.hpp), never from a generator that advances as samples are read. That is what
// lets accumulation, processes and resumes leave every sample unchanged.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "../framework/core/tensor.hpp"

namespace accrue {

/// Shape and element type of one sample's input or target (without the batch dimension).
struct TensorSpec {
  Shape shape;
  DType dtype = DType::f32;
  std::size_t nbytes() const { return static_cast<std::size_t>(shape.numel()) * dtype_size(dtype); }
  friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
};

/// The shapes and types of one sample's inputs and targets: one of each for a model of one input
/// and one output, else one per model input (output), in the model's order, optionally named.
struct SampleLayout {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> targets;
  /// Empty, or one name per input (target): the model's input (output) names they go to.
  std::vector<std::string> input_names, target_names;

  SampleLayout() = default;
  SampleLayout(TensorSpec input, TensorSpec target) : inputs{std::move(input)}, targets{std::move(target)} {}
  SampleLayout(std::vector<TensorSpec> inputs, std::vector<TensorSpec> targets)
      : inputs(std::move(inputs)), targets(std::move(targets)) {}
  /// The one input (target); throws ValueError when there are several or none, saying how many.
  const TensorSpec& input() const;
  const TensorSpec& target() const;
  /// "float32 (3, 32, 32) -> int32 ()"; with names "'a' float32 (4,), 'b' int32 (2,) -> ...".
  std::string str() const;
  friend bool operator==(const SampleLayout&, const SampleLayout&) = default;
};

/// Where SampleSource::read writes one sample: a buffer for each of its inputs and targets, of
/// their specs' nbytes().
struct SampleBuffers {
  std::span<void* const> inputs;
  std::span<void* const> targets;
};

/// What a sample may depend on besides its index: the loader's seed and the epoch.
struct ReadContext {
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;
};

class TensorSource;

class SampleSource {
 public:
  virtual ~SampleSource() = default;

  virtual std::string name() const = 0;
  virtual std::int64_t size() const = 0;
  /// The same for every sample.
  virtual SampleLayout layout() const = 0;
  /// Writes sample i's inputs and targets to `out`. Called from several threads at once; errors
  /// are thrown as accrue::Error naming the sample's file or row.
  virtual void read(std::int64_t i, const ReadContext& context, const SampleBuffers& out) const = 0;
  /// Sample i's targets alone, which fit needs for every sample before training (to count the
  /// units of a window). Reads the whole sample unless a source knows its targets cheaply.
  virtual void read_targets(std::int64_t i, std::span<void* const> targets) const;
  /// Tells two sources of the same size apart, for checkpoints and processes to compare. Reads
  /// every sample unless a source knows better (a folder's file names and sizes).
  virtual std::string fingerprint() const;
  /// The tensors, when the samples are held as tensors (loaders then view and gather them).
  virtual const TensorSource* tensors() const { return nullptr; }
};

/// Samples as rows of tensors: inputs (N, ...) and targets (N, ...), one of each or several.
class TensorSource final : public SampleSource {
 public:
  /// Throws ShapeError when the tensors have different numbers of rows, naming them.
  TensorSource(Tensor inputs, Tensor targets, std::string name);
  /// Several inputs or targets, named when the names are given (one per tensor).
  TensorSource(std::vector<Tensor> inputs, std::vector<Tensor> targets, std::string name,
               std::vector<std::string> input_names = {}, std::vector<std::string> target_names = {});

  std::string name() const override { return name_; }
  std::int64_t size() const override { return size_; }
  SampleLayout layout() const override { return layout_; }
  void read(std::int64_t i, const ReadContext& context, const SampleBuffers& out) const override;
  void read_targets(std::int64_t i, std::span<void* const> targets) const override;
  std::string fingerprint() const override;
  const TensorSource* tensors() const override { return this; }

  const std::vector<Tensor>& inputs() const { return inputs_; }
  const std::vector<Tensor>& targets() const { return targets_; }

 private:
  std::vector<Tensor> inputs_, targets_;
  std::string name_;
  std::int64_t size_ = 0;
  SampleLayout layout_;
};

namespace detail {
/// Buffers for one sample's parts of `specs`, and the pointers SampleBuffers takes.
struct PartBuffers {
  explicit PartBuffers(const std::vector<TensorSpec>& specs);
  std::vector<std::vector<std::byte>> bytes;
  std::vector<void*> pointers;
};
}  // namespace detail

/// "crc32 1a2b3c4d" of bytes, as fingerprints print them.
std::string crc32_fingerprint(std::uint32_t crc);

}  // namespace accrue
