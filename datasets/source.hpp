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
#include <string>

#include "../framework/core/tensor.hpp"

namespace accrue {

/// Shape and element type of one sample's input or target (without the batch dimension).
struct TensorSpec {
  Shape shape;
  DType dtype = DType::f32;
  std::size_t nbytes() const { return static_cast<std::size_t>(shape.numel()) * dtype_size(dtype); }
  friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
};

struct SampleLayout {
  TensorSpec input;
  TensorSpec target;
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
  /// Writes sample i's input and target (layout()'s sizes) to `input` and `target`. Called from
  /// several threads at once; errors are thrown as accrue::Error naming the sample's file or row.
  virtual void read(std::int64_t i, const ReadContext& context, void* input, void* target) const = 0;
  /// Sample i's target alone, which fit needs for every sample before training (to count the
  /// units of a window). Reads the whole sample unless a source knows its targets cheaply.
  virtual void read_target(std::int64_t i, void* target) const;
  /// Tells two sources of the same size apart, for checkpoints and processes to compare. Reads
  /// every sample unless a source knows better (a folder's file names and sizes).
  virtual std::string fingerprint() const;
  /// The tensors, when the samples are held as two tensors (loaders then view and gather them).
  virtual const TensorSource* tensors() const { return nullptr; }
};

/// Samples as rows of two tensors: inputs (N, ...) and targets (N, ...).
class TensorSource final : public SampleSource {
 public:
  /// Throws ShapeError when inputs and targets have different numbers of rows, naming both.
  TensorSource(Tensor inputs, Tensor targets, std::string name);

  std::string name() const override { return name_; }
  std::int64_t size() const override { return inputs_.size(0); }
  SampleLayout layout() const override;
  void read(std::int64_t i, const ReadContext& context, void* input, void* target) const override;
  void read_target(std::int64_t i, void* target) const override;
  std::string fingerprint() const override;
  const TensorSource* tensors() const override { return this; }

  const Tensor& inputs() const { return inputs_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor inputs_, targets_;
  std::string name_;
};

/// "crc32 1a2b3c4d" of bytes, as fingerprints print them.
std::string crc32_fingerprint(std::uint32_t crc);

}  // namespace accrue
