#pragma once
// Transforms of image samples, with torchvision's semantics and parameter names: an image is a
// float32 tensor (C, H, W), values in [0, 1] as torchvision's ToTensor gives them.
//
//   train = train.map({transforms::RandomCrop{32, {.padding = 4}}, transforms::RandomHorizontalFlip{},
//                      transforms::Normalize{{0.4914f, 0.4822f, 0.4465f}, {0.247f, 0.243f, 0.261f}}});
//
// Randomness is a pure function of (seed, epoch, sample index, transform position): a transform's
// draws for sample i in epoch e come from the Philox generator keyed by the loader's seed and the
// transform's place in the pipeline, at counter (e, i). No generator advances as samples are read,
// so the same sample looks the same whatever the micro-batch, the accumulation, the number of
// processes or threads, or where a run was resumed; a checkpoint stores no state for the data.
//
// Each random transform draws its parameters, then applies the deterministic function of
// transforms::functional with them (as torchvision's get_params and transforms.functional); tests
// compare those functions with torchvision's on the same image (tests/data/make_transform_reference.py).

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset.hpp"
#include "scratch.hpp"
#include "../framework/core/shape.hpp"

namespace accrue::transforms {

/// An image being transformed: channels x height x width floats, row-major.
struct Image {
  std::int64_t channels = 0, height = 0, width = 0;
  datasets::ScratchVector<float> pixels;
  Image() = default;
  Image(std::int64_t c, std::int64_t h, std::int64_t w, float fill = 0.0f)
      : channels(c), height(h), width(w), pixels(static_cast<std::size_t>(c * h * w), fill) {}
  float& at(std::int64_t c, std::int64_t y, std::int64_t x) {
    return pixels[static_cast<std::size_t>((c * height + y) * width + x)];
  }
  float at(std::int64_t c, std::int64_t y, std::int64_t x) const {
    return pixels[static_cast<std::size_t>((c * height + y) * width + x)];
  }
  /// Row y of channel c.
  float* row(std::int64_t c, std::int64_t y) { return &pixels[static_cast<std::size_t>((c * height + y) * width)]; }
  const float* row(std::int64_t c, std::int64_t y) const {
    return &pixels[static_cast<std::size_t>((c * height + y) * width)];
  }
  Shape shape() const { return {channels, height, width}; }
};

/// The random numbers of one transform for one sample in one epoch: a Philox stream at counter
/// (epoch, sample index), keyed by (seed, transform position).
class Draws {
 public:
  Draws(std::uint64_t seed, std::int64_t epoch, std::int64_t sample, int transform);
  /// Uniform in [0, 1), 53 bits.
  double uniform();
  /// Uniform in [low, high).
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  /// Uniform integer in [0, n) without bias; n >= 1.
  std::int64_t below(std::int64_t n);

 private:
  std::uint64_t key_, sample_;
  std::uint64_t counter_;
};

enum class Interpolation { nearest, bilinear, bicubic };
enum class PaddingMode { constant, edge, reflect, symmetric };

/// What each transform is: its output shape for an input shape, and what it does to one image.
class Transform {
 public:
  virtual ~Transform() = default;
  /// "RandomCrop(size=(32, 32), padding=[4, 4, 4, 4])", for fingerprints and messages.
  virtual std::string describe() const = 0;
  /// The shape of the output for an input of `input` (C, H, W); throws ShapeError naming the
  /// transform when it cannot take that input.
  virtual Shape output_shape(const Shape& input) const { return input; }
  virtual void apply(Image& image, Draws& draws) const = 0;
};

/// A pipeline of transforms applied in order.
class Compose {
 public:
  Compose() = default;
  template <class... T>
    requires(std::derived_from<std::decay_t<T>, Transform> && ...)
  Compose(T&&... transforms) {  // NOLINT: a braced list of transforms reads as a pipeline
    (steps_.push_back(std::make_shared<const std::decay_t<T>>(std::forward<T>(transforms))), ...);
  }
  Compose& then(std::shared_ptr<const Transform> step) {
    steps_.push_back(std::move(step));
    return *this;
  }
  const std::vector<std::shared_ptr<const Transform>>& steps() const { return steps_; }
  Shape output_shape(Shape input) const;
  std::string describe() const;
  /// Transforms `image` as sample `sample` of epoch `epoch` under `seed`.
  void apply(Image& image, std::uint64_t seed, std::int64_t epoch, std::int64_t sample) const;

 private:
  std::vector<std::shared_ptr<const Transform>> steps_;
};

/// Padding of an image's sides, as torchvision's `padding`: `4` (all sides), `{4}`, `{2, 4}`
/// (left/right, top/bottom) or `{1, 2, 3, 4}` (left, top, right, bottom).
struct Padding {
  std::vector<std::int64_t> sides;
  Padding() = default;
  Padding(std::int64_t all) : sides{all} {}                                  // NOLINT: 4 reads as 4 on every side
  Padding(std::initializer_list<std::int64_t> values) : sides(values) {}  // NOLINT
};

struct RandomCropOptions {
  /// Padding added before cropping (none by default): `.padding = 4`, `.padding = {2, 4}`.
  Padding padding = {};
  bool pad_if_needed = false;
  float fill = 0.0f;
  PaddingMode padding_mode = PaddingMode::constant;
};
/// A crop of `size` at a random place, after optional padding.
class RandomCrop final : public Transform {
 public:
  explicit RandomCrop(Size2 size, RandomCropOptions options = {});
  std::string describe() const override;
  Shape output_shape(const Shape& input) const override;
  void apply(Image& image, Draws& draws) const override;

 private:
  Size2 size_;
  RandomCropOptions options_;
  std::int64_t pad_[4] = {0, 0, 0, 0};  // left, top, right, bottom
};

/// Mirrors left to right with probability p.
class RandomHorizontalFlip final : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  std::string describe() const override;
  void apply(Image& image, Draws& draws) const override;

 private:
  double p_;
};

/// Mirrors top to bottom with probability p.
class RandomVerticalFlip final : public Transform {
 public:
  explicit RandomVerticalFlip(double p = 0.5);
  std::string describe() const override;
  void apply(Image& image, Draws& draws) const override;

 private:
  double p_;
};

struct RandomResizedCropOptions {
  std::pair<double, double> scale = {0.08, 1.0};
  std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0};
  Interpolation interpolation = Interpolation::bilinear;
  bool antialias = true;
};
/// A crop of random area and aspect ratio, resized to `size` (torchvision's get_params: ten tries,
/// then a central crop).
class RandomResizedCrop final : public Transform {
 public:
  explicit RandomResizedCrop(Size2 size, RandomResizedCropOptions options = {});
  std::string describe() const override;
  Shape output_shape(const Shape& input) const override;
  void apply(Image& image, Draws& draws) const override;

 private:
  Size2 size_;
  RandomResizedCropOptions options_;
};

struct ColorJitterOptions {
  /// Factors drawn from [max(0, 1 - x), 1 + x] (hue: [-x, x], x <= 0.5); 0 leaves that property.
  double brightness = 0.0, contrast = 0.0, saturation = 0.0, hue = 0.0;
};
/// Brightness, contrast, saturation and hue changed by random factors, in a random order.
class ColorJitter final : public Transform {
 public:
  explicit ColorJitter(ColorJitterOptions options);
  std::string describe() const override;
  Shape output_shape(const Shape& input) const override;
  void apply(Image& image, Draws& draws) const override;

 private:
  ColorJitterOptions options_;
};

struct RandomRotationOptions {
  Interpolation interpolation = Interpolation::nearest;
  float fill = 0.0f;
};
/// Rotated about its centre by an angle uniform in [-degrees, degrees] (counter-clockwise), same size.
class RandomRotation final : public Transform {
 public:
  explicit RandomRotation(double degrees, RandomRotationOptions options = {});
  std::string describe() const override;
  void apply(Image& image, Draws& draws) const override;

 private:
  double degrees_;
  RandomRotationOptions options_;
};

/// (x - mean[c]) / std[c] per channel.
class Normalize final : public Transform {
 public:
  Normalize(std::vector<float> mean, std::vector<float> std);
  std::string describe() const override;
  Shape output_shape(const Shape& input) const override;
  void apply(Image& image, Draws& draws) const override;

 private:
  std::vector<float> mean_, std_;
};

struct ResizeOptions {
  Interpolation interpolation = Interpolation::bilinear;
  bool antialias = true;
};
/// As torchvision's Resize: `Resize{256}` makes the shorter side 256 and keeps the aspect ratio;
/// `Resize{{224, 224}}` makes exactly (height, width).
class Resize final : public Transform {
 public:
  /// The shorter side becomes `size`, the longer int(size x longer / shorter).
  explicit Resize(std::int64_t size, ResizeOptions options = {});
  /// Exactly `size` (height, width).
  explicit Resize(Size2 size, ResizeOptions options = {});
  /// Resize{size}, by another name.
  static Resize smaller_edge(std::int64_t size, ResizeOptions options = {});
  std::string describe() const override;
  Shape output_shape(const Shape& input) const override;
  void apply(Image& image, Draws& draws) const override;

 private:
  Resize(std::optional<Size2> size, std::int64_t edge, ResizeOptions options);
  std::optional<Size2> size_;
  std::int64_t edge_ = 0;
  ResizeOptions options_;
};

/// The central `size` crop (padded with zeros when the image is smaller).
class CenterCrop final : public Transform {
 public:
  explicit CenterCrop(Size2 size);
  std::string describe() const override;
  Shape output_shape(const Shape& input) const override;
  void apply(Image& image, Draws& draws) const override;

 private:
  Size2 size_;
};

/// A function of the user's own. It may draw from `draws` (the same numbers for the same seed,
/// epoch and sample); `output_shape` says what it makes of an input shape (unchanged by default).
class Lambda final : public Transform {
 public:
  using Function = std::function<void(Image&, Draws&)>;
  explicit Lambda(std::string name, Function function, std::function<Shape(const Shape&)> output_shape = {});
  std::string describe() const override { return "Lambda(" + name_ + ")"; }
  Shape output_shape(const Shape& input) const override { return shape_ ? shape_(input) : input; }
  void apply(Image& image, Draws& draws) const override { function_(image, draws); }

 private:
  std::string name_;
  Function function_;
  std::function<Shape(const Shape&)> shape_;
};

/// The deterministic functions the transforms apply, with torchvision.transforms.functional's
/// meaning, for fixed parameters.
namespace functional {
/// Rows top.. and columns left.. of the image; what lies outside it is `fill`.
Image crop(const Image& image, std::int64_t top, std::int64_t left, std::int64_t height, std::int64_t width,
           float fill = 0.0f);
/// pad = left, top, right, bottom.
Image pad(const Image& image, const std::int64_t pad[4], PaddingMode mode, float fill = 0.0f);
void hflip(Image& image);
void vflip(Image& image);
/// To (height, width); bilinear and bicubic with antialias filter over the whole footprint when
/// shrinking, as torch's interpolate(antialias=True) and PIL do.
Image resize(const Image& image, Size2 size, Interpolation interpolation = Interpolation::bilinear,
             bool antialias = true);
Image center_crop(const Image& image, Size2 size);
/// resize's weights along one axis as a dense (out x in) row-major matrix: output pixel i is row
/// i's weighted sum of the input's pixels, the taps resize uses (layers::Resizing multiplies by it).
std::vector<float> resize_matrix(std::int64_t in, std::int64_t out, Interpolation interpolation = Interpolation::bilinear,
                                 bool antialias = true);
/// A window of an image: rows [top, top + height), columns [left, left + width).
struct Window {
  std::int64_t top = 0, left = 0, height = 0, width = 0;
};
/// Keras's smart_resize window: the largest centred window of an image of (height, width) with the
/// aspect ratio of `target` (at least one pixel each way).
Window aspect_ratio_window(std::int64_t height, std::int64_t width, Size2 target);
void adjust_brightness(Image& image, double factor);
void adjust_contrast(Image& image, double factor);
void adjust_saturation(Image& image, double factor);
void adjust_hue(Image& image, double factor);
/// Counter-clockwise by `angle` degrees about the centre, keeping the size.
Image rotate(const Image& image, double angle, Interpolation interpolation = Interpolation::nearest, float fill = 0.0f);
void normalize(Image& image, const std::vector<float>& mean, const std::vector<float>& std);
}  // namespace functional

}  // namespace accrue::transforms
