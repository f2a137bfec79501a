#pragma once
// Keras's random augmentation layers: RandomFlip, RandomCrop, RandomRotation, RandomZoom,
// RandomContrast, RandomBrightness. They change each image in training and leave it as it is in
// evaluation, predict and export (RandomCrop, whose output is smaller, takes the central window
// there), so a saved model carries its augmentation and serves without it:
//
//   Sequential model{layers::Input{3, 64, 64}, layers::RandomFlip{}, layers::RandomRotation{0.05},
//                    layers::RandomZoom{0.1}, layers::Rescaling{1.0f / 255}, ...};
//
// Randomness is that of the dataset transforms (datasets/transforms.hpp): in fit, the draws for
// sample i of the dataset in epoch e are a Philox stream at counter (e, i), keyed by fit's seed and
// the layer's name, so accumulation, the number of processes, a halved micro-batch and a resumed
// run cannot change what a sample looks like, and a checkpoint holds nothing for them. fit tells
// the layers which samples a batch holds with an AugmentationKeys scope; a forward pass in training
// outside one (a loop of one's own) draws a fresh key from the model's generator per batch.
//
// They work on data, not on what has weights before them: no gradient passes through them, and an
// input that needs one is refused. Images are (channels, height, width); the work is done on the
// CPU, sample by sample, across the thread pool.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../../datasets/transforms.hpp"
#include "../../framework/core/non_copyable.hpp"
#include "../layer.hpp"

namespace accrue::layers {

/// While one lives, the augmentation layers that run on this thread draw for row r of a batch
/// from (seed, epoch, samples[r]). fit and verify_accumulation set one around each micro-batch's
/// forward and backward (a recomputed forward draws the same).
class AugmentationKeys : NonCopyable {
 public:
  AugmentationKeys(std::uint64_t seed, std::int64_t epoch, std::span<const std::int64_t> samples);
  ~AugmentationKeys();
  /// This thread's innermost one, or null.
  static const AugmentationKeys* current();
  std::uint64_t seed() const { return seed_; }
  std::int64_t epoch() const { return epoch_; }
  std::span<const std::int64_t> samples() const { return samples_; }

 private:
  std::uint64_t seed_;
  std::int64_t epoch_;
  std::span<const std::int64_t> samples_;
  const AugmentationKeys* outer_;
};

/// A range a factor is drawn from: `0.2` for [-0.2, 0.2], `{-0.1, 0.3}` for [-0.1, 0.3].
struct FactorRange {
  double lower = 0.0, upper = 0.0;
  FactorRange(double both) : lower(-both), upper(both) {}  // NOLINT: 0.2 reads as [-0.2, 0.2]
  FactorRange(double low, double high) : lower(low), upper(high) {}
  std::vector<double> values() const { return {lower, upper}; }
};

/// Where a rotated or zoomed image reads past its edges (Keras's fill_mode): reflect (d c b a |
/// a b c d | d c b a), wrap (a b c d | a b c d), nearest (a a a | a b c d | d d d) or constant
/// (fill_value).
enum class FillMode { reflect, wrap, nearest, constant };

/// What the augmentation layers share: training against inference, the draws per sample, the
/// CPU loop over samples. A layer of this kind implements augment() for one image.
class RandomAugmentation : public Layer {
 public:
  /// Takes images (C, H, W); gives augmented_shape's.
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
  ImageSizes image_sizes() const override { return ImageSizes::follows; }

 protected:
  RandomAugmentation() = default;
  /// The output sample shape for an input sample of `input`: the same, unless the layer crops.
  virtual Shape augmented_shape(const Shape& input) const { return input; }
  /// Makes `out` (this layer's output sample shape) from one image `in` with `draws`.
  virtual void augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const = 0;
  /// The output outside training: the input itself, except for a layer that changes the size.
  virtual Tensor inference(const Tensor& x) const { return x; }

 private:
  // The Philox key's part that tells this layer's draws from other layers' and the transforms'.
  int stream() const;
};

enum class FlipMode { horizontal, vertical, horizontal_and_vertical };

struct RandomFlipOptions {
  std::string name = {};
};
/// Mirrors each image left to right and/or top to bottom, each with probability 1/2.
class RandomFlip final : public LayerBase<RandomFlip, "RandomFlip", RandomAugmentation> {
 public:
  explicit RandomFlip(FlipMode mode = FlipMode::horizontal_and_vertical, RandomFlipOptions options = {});
  LayerConfig config() const override;
  static RandomFlip from_config(const ConfigReader& c);

 private:
  void augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const override;
  FlipMode mode_;
};

struct RandomCropOptions {
  std::string name = {};
};
/// A window of `size` (height, width) at a random place in training; the central window of that
/// aspect ratio resized to `size` in inference (Keras's rule, which an image smaller than `size`
/// gets in training too).
class RandomCrop final : public LayerBase<RandomCrop, "RandomCrop", RandomAugmentation> {
 public:
  explicit RandomCrop(Size2 size, RandomCropOptions options = {});
  LayerConfig config() const override;
  static RandomCrop from_config(const ConfigReader& c);
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  ImageSizes image_sizes() const override { return ImageSizes::resizes; }

 private:
  Shape augmented_shape(const Shape& input) const override { return {input[0], size_.h, size_.w}; }
  void augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const override;
  Tensor inference(const Tensor& x) const override;
  Size2 size_;
};

/// How RandomRotation and RandomZoom sample the input (Keras's defaults).
struct AffineOptions {
  FillMode fill_mode = FillMode::reflect;
  /// nearest or bilinear.
  transforms::Interpolation interpolation = transforms::Interpolation::bilinear;
  float fill_value = 0.0f;
  std::string name = {};
};

/// Rotated about its centre by factor x 2 pi, the factor uniform in the range (counter-clockwise
/// for positive angles): `RandomRotation{0.1}` turns by up to 36 degrees either way.
class RandomRotation final : public LayerBase<RandomRotation, "RandomRotation", RandomAugmentation> {
 public:
  explicit RandomRotation(FactorRange factor, AffineOptions options = {});
  LayerConfig config() const override;
  static RandomRotation from_config(const ConfigReader& c);

 private:
  void augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const override;
  FactorRange factor_;
  AffineOptions options_;
};

/// Zoomed about its centre by 1 + a factor from the range, out for positive factors (the image
/// looks smaller), in for negative ones: `RandomZoom{0.2}`. Without `width_factor` both sides
/// take the height's factor (the aspect ratio is kept).
class RandomZoom final : public LayerBase<RandomZoom, "RandomZoom", RandomAugmentation> {
 public:
  explicit RandomZoom(FactorRange height_factor, std::optional<FactorRange> width_factor = std::nullopt,
                      AffineOptions options = {});
  LayerConfig config() const override;
  static RandomZoom from_config(const ConfigReader& c);

 private:
  void augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const override;
  FactorRange height_;
  std::optional<FactorRange> width_;
  AffineOptions options_;
};

/// The range pixel values lie in: outputs are clipped to it, and a brightness factor of 1 adds its
/// width. Keras's default is [0, 255]: raw pixels, before Rescaling.
struct ValueRangeOptions {
  float low = 0.0f, high = 255.0f;
  std::string name = {};
};

/// Each channel of each image moved away from or towards its mean: (x - mean) x f + mean, f
/// uniform in [1 - factor, 1 + factor] (Keras's RandomContrast), clipped to the value range.
class RandomContrast final : public LayerBase<RandomContrast, "RandomContrast", RandomAugmentation> {
 public:
  explicit RandomContrast(double factor, ValueRangeOptions options = {});
  LayerConfig config() const override;
  static RandomContrast from_config(const ConfigReader& c);

 private:
  void augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const override;
  double factor_;
  ValueRangeOptions options_;
};

/// Each image brightened or darkened by f x (high - low), f from the range (-1 black, 1 white),
/// clipped to the value range: Keras's RandomBrightness.
class RandomBrightness final : public LayerBase<RandomBrightness, "RandomBrightness", RandomAugmentation> {
 public:
  explicit RandomBrightness(FactorRange factor, ValueRangeOptions options = {});
  LayerConfig config() const override;
  static RandomBrightness from_config(const ConfigReader& c);

 private:
  void augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const override;
  FactorRange factor_;
  ValueRangeOptions options_;
};

}  // namespace accrue::layers
