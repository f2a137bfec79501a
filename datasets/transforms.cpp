#include "transforms.hpp"

#include <zlib.h>

#include <cmath>
#include <cstring>

#include "../framework/core/error.hpp"
#include "../framework/core/random.hpp"
#include "../framework/core/philox.hpp"

namespace accrue::transforms {
namespace {


const char* name_of(Interpolation i) {
  switch (i) {
    case Interpolation::nearest: return "nearest";
    case Interpolation::bilinear: return "bilinear";
    case Interpolation::bicubic: return "bicubic";
  }
  return "?";
}

const char* name_of(PaddingMode m) {
  switch (m) {
    case PaddingMode::constant: return "constant";
    case PaddingMode::edge: return "edge";
    case PaddingMode::reflect: return "reflect";
    case PaddingMode::symmetric: return "symmetric";
  }
  return "?";
}

void check_image(const Shape& input, const std::string& transform) {
  ACCRUE_CHECK_SHAPE(input.rank() == 3, "{}: needs images of shape (C, H, W), got samples of shape {}", transform, input);
}

void check_size(Size2 size, const char* transform) {
  ACCRUE_CHECK(size.h >= 1 && size.w >= 1, "{}: size {} must be at least 1x1", transform, size.str());
}

// A dataset's samples through a pipeline; the randomness of sample i is keyed by this source's i.
class TransformSource final : public SampleSource {
 public:
  TransformSource(Dataset inner, Compose pipeline) : inner_(std::move(inner)), pipeline_(std::move(pipeline)) {
    const SampleLayout l = inner_.layout();
    ACCRUE_CHECK(l.inputs.size() == 1, "dataset '{}': transforms need samples of one input (an image), these have {}",
                 inner_.name(), l.inputs.size());
    ACCRUE_CHECK(l.input().dtype == DType::f32, "dataset '{}': transforms need float32 images, the samples are {}",
                 inner_.name(), dtype_name(l.input().dtype));
    try {
      layout_ = l;
      layout_.inputs = {{pipeline_.output_shape(l.input().shape), DType::f32}};
    } catch (Error& e) {
      e.prepend(fmt::format("dataset '{}'", inner_.name()));
      throw;
    }
  }
  std::string name() const override { return inner_.name(); }
  std::int64_t size() const override { return inner_.size(); }
  SampleLayout layout() const override { return layout_; }
  void read(std::int64_t i, const ReadContext& context, const SampleBuffers& out) const override {
    const Shape in = inner_.sample_shape();
    Image image(in[0], in[1], in[2]);
    void* const pixels = image.pixels.data();
    inner_.source().read(i, context, {{&pixels, 1}, out.targets});
    pipeline_.apply(image, context.seed, context.epoch, i);
    ACCRUE_CHECK_SHAPE(image.shape() == layout_.input().shape,
                       "dataset '{}': sample {} came out of {} with shape {}, but the pipeline's output_shape said {} "
                       "(give a Lambda that changes the shape its output_shape)",
                       inner_.name(), i, pipeline_.describe(), image.shape(), layout_.input().shape);
    std::memcpy(out.inputs[0], image.pixels.data(), image.pixels.size() * sizeof(float));
  }
  void read_targets(std::int64_t i, std::span<void* const> targets) const override {
    inner_.source().read_targets(i, targets);
  }
  std::string fingerprint() const override {
    const std::string steps = pipeline_.describe();
    const uLong crc = crc32_z(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(steps.data()), steps.size());
    return fmt::format("{} through {}", inner_.fingerprint(), crc32_fingerprint(static_cast<std::uint32_t>(crc)));
  }

 private:
  Dataset inner_;
  Compose pipeline_;
  SampleLayout layout_;
};

}  // namespace

Draws::Draws(std::uint64_t seed, std::int64_t epoch, std::int64_t sample, int transform)
    : key_(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(transform) + 0x7F4A7C15ull))),
      sample_(static_cast<std::uint64_t>(sample)),
      counter_(static_cast<std::uint64_t>(epoch) << 32) {}

double Draws::uniform() {
  const auto bits = kernels::common::philox4x32_10(key_, counter_++, sample_);
  const std::uint64_t x = (static_cast<std::uint64_t>(bits.v[0]) << 21) ^ bits.v[1];
  return static_cast<double>(x & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

std::int64_t Draws::below(std::int64_t n) {
  ACCRUE_CHECK(n >= 1, "transforms: drawing below {}", n);
  const auto bound = static_cast<std::uint64_t>(n);
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  for (;;) {
    const auto bits = kernels::common::philox4x32_10(key_, counter_++, sample_);
    const std::uint64_t x = (static_cast<std::uint64_t>(bits.v[0]) << 32) | bits.v[1];
    if (x < limit) return static_cast<std::int64_t>(x % bound);
  }
}

Shape Compose::output_shape(Shape input) const {
  for (const auto& step : steps_) input = step->output_shape(input);
  return input;
}

std::string Compose::describe() const {
  std::string out = "Compose(";
  for (std::size_t k = 0; k < steps_.size(); ++k) out += (k ? ", " : "") + steps_[k]->describe();
  return out + ")";
}

void Compose::apply(Image& image, std::uint64_t seed, std::int64_t epoch, std::int64_t sample) const {
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    Draws draws{seed, epoch, sample, static_cast<int>(k)};
    steps_[k]->apply(image, draws);
  }
}

// RandomCrop --------------------------------------------------------------------------------------

RandomCrop::RandomCrop(Size2 size, RandomCropOptions options) : size_(size), options_(std::move(options)) {
  check_size(size_, "RandomCrop");
  const auto& p = options_.padding.sides;
  ACCRUE_CHECK(p.empty() || p.size() == 1 || p.size() == 2 || p.size() == 4,
               "RandomCrop: padding takes 1, 2 or 4 values, got {}", p.size());
  for (std::int64_t v : p) ACCRUE_CHECK(v >= 0, "RandomCrop: padding {} is negative", v);
  if (p.size() == 1) std::fill(pad_, pad_ + 4, p[0]);
  if (p.size() == 2) pad_[0] = pad_[2] = p[0], pad_[1] = pad_[3] = p[1];
  if (p.size() == 4) std::copy(p.begin(), p.end(), pad_);
}

std::string RandomCrop::describe() const {
  return fmt::format("RandomCrop(size={}, padding=[{}, {}, {}, {}], pad_if_needed={}, fill={}, padding_mode={})", size_.str(),
                     pad_[0], pad_[1], pad_[2], pad_[3], options_.pad_if_needed, options_.fill,
                     name_of(options_.padding_mode));
}

Shape RandomCrop::output_shape(const Shape& input) const {
  check_image(input, describe());
  const std::int64_t h = input[1] + pad_[1] + pad_[3], w = input[2] + pad_[0] + pad_[2];
  ACCRUE_CHECK_SHAPE(options_.pad_if_needed || (h >= size_.h && w >= size_.w),
                     "{}: the (padded) image is {}x{}, smaller than the crop; set .pad_if_needed", describe(), h, w);
  return {input[0], size_.h, size_.w};
}

void RandomCrop::apply(Image& image, Draws& draws) const {
  // Where the image sits in the padded one: padding, then pad_if_needed on both sides of an axis
  // still short of the crop, as torchvision pads.
  std::int64_t top_pad = pad_[1], left_pad = pad_[0];
  std::int64_t height = image.height + pad_[1] + pad_[3], width = image.width + pad_[0] + pad_[2];
  const std::int64_t more_w = options_.pad_if_needed ? std::max<std::int64_t>(size_.w - width, 0) : 0;
  const std::int64_t more_h = options_.pad_if_needed ? std::max<std::int64_t>(size_.h - height, 0) : 0;
  left_pad += more_w, width += 2 * more_w, top_pad += more_h, height += 2 * more_h;
  const bool fits = height == size_.h && width == size_.w;  // then nothing is drawn
  if (fits && top_pad == 0 && left_pad == 0) return;
  const std::int64_t top = fits ? 0 : draws.below(height - size_.h + 1);
  const std::int64_t left = fits ? 0 : draws.below(width - size_.w + 1);
  if (options_.padding_mode == PaddingMode::constant) {
    // Padding with a constant and cropping the padded image is one crop of the image at an offset.
    image = functional::crop(image, top - top_pad, left - left_pad, size_.h, size_.w, options_.fill);
    return;
  }
  // The other modes pad in torchvision's steps: reflecting an image already reflected differs.
  if (pad_[0] || pad_[1] || pad_[2] || pad_[3]) image = functional::pad(image, pad_, options_.padding_mode, options_.fill);
  if (more_w > 0) {
    const std::int64_t p[4] = {more_w, 0, more_w, 0};
    image = functional::pad(image, p, options_.padding_mode, options_.fill);
  }
  if (more_h > 0) {
    const std::int64_t p[4] = {0, more_h, 0, more_h};
    image = functional::pad(image, p, options_.padding_mode, options_.fill);
  }
  if (!fits) image = functional::crop(image, top, left, size_.h, size_.w);
}

// Flips -------------------------------------------------------------------------------------------

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  ACCRUE_CHECK(p >= 0.0 && p <= 1.0, "RandomHorizontalFlip: p = {} is not in [0, 1]", p);
}
std::string RandomHorizontalFlip::describe() const { return fmt::format("RandomHorizontalFlip(p={})", p_); }
void RandomHorizontalFlip::apply(Image& image, Draws& draws) const {
  if (draws.uniform() < p_) functional::hflip(image);
}

RandomVerticalFlip::RandomVerticalFlip(double p) : p_(p) {
  ACCRUE_CHECK(p >= 0.0 && p <= 1.0, "RandomVerticalFlip: p = {} is not in [0, 1]", p);
}
std::string RandomVerticalFlip::describe() const { return fmt::format("RandomVerticalFlip(p={})", p_); }
void RandomVerticalFlip::apply(Image& image, Draws& draws) const {
  if (draws.uniform() < p_) functional::vflip(image);
}

// RandomResizedCrop -------------------------------------------------------------------------------

RandomResizedCrop::RandomResizedCrop(Size2 size, RandomResizedCropOptions options) : size_(size), options_(options) {
  check_size(size_, "RandomResizedCrop");
  ACCRUE_CHECK(options_.scale.first > 0.0 && options_.scale.first <= options_.scale.second,
               "RandomResizedCrop: scale ({}, {}) needs 0 < low <= high", options_.scale.first, options_.scale.second);
  ACCRUE_CHECK(options_.ratio.first > 0.0 && options_.ratio.first <= options_.ratio.second,
               "RandomResizedCrop: ratio ({}, {}) needs 0 < low <= high", options_.ratio.first, options_.ratio.second);
}

std::string RandomResizedCrop::describe() const {
  return fmt::format("RandomResizedCrop(size={}, scale=({}, {}), ratio=({}, {}), interpolation={}, antialias={})", size_.str(),
                     options_.scale.first, options_.scale.second, options_.ratio.first, options_.ratio.second,
                     name_of(options_.interpolation), options_.antialias);
}

Shape RandomResizedCrop::output_shape(const Shape& input) const {
  check_image(input, describe());
  return {input[0], size_.h, size_.w};
}

void RandomResizedCrop::apply(Image& image, Draws& draws) const {
  // torchvision's get_params: ten tries at a crop of random area and log-uniform aspect ratio.
  const auto height = image.height, width = image.width;
  const double area = static_cast<double>(height * width);
  const double log_low = std::log(options_.ratio.first), log_high = std::log(options_.ratio.second);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * draws.uniform(options_.scale.first, options_.scale.second);
    const double aspect = std::exp(draws.uniform(log_low, log_high));
    const auto w = static_cast<std::int64_t>(std::nearbyint(std::sqrt(target * aspect)));
    const auto h = static_cast<std::int64_t>(std::nearbyint(std::sqrt(target / aspect)));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const std::int64_t top = draws.below(height - h + 1), left = draws.below(width - w + 1);
      image = functional::resize(functional::crop(image, top, left, h, w), size_, options_.interpolation,
                                 options_.antialias);
      return;
    }
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  std::int64_t w = width, h = height;
  if (in_ratio < options_.ratio.first)
    h = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(w) / options_.ratio.first));
  else if (in_ratio > options_.ratio.second)
    w = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(h) * options_.ratio.second));
  image = functional::resize(functional::crop(image, (height - h) / 2, (width - w) / 2, h, w), size_,
                             options_.interpolation, options_.antialias);
}

// ColorJitter -------------------------------------------------------------------------------------

ColorJitter::ColorJitter(ColorJitterOptions options) : options_(options) {
  ACCRUE_CHECK(options_.brightness >= 0 && options_.contrast >= 0 && options_.saturation >= 0,
               "ColorJitter: brightness, contrast and saturation must not be negative");
  ACCRUE_CHECK(options_.hue >= 0 && options_.hue <= 0.5, "ColorJitter: hue {} is not in [0, 0.5]", options_.hue);
}

std::string ColorJitter::describe() const {
  return fmt::format("ColorJitter(brightness={}, contrast={}, saturation={}, hue={})", options_.brightness,
                     options_.contrast, options_.saturation, options_.hue);
}

Shape ColorJitter::output_shape(const Shape& input) const {
  check_image(input, describe());
  ACCRUE_CHECK_SHAPE(input[0] == 1 || input[0] == 3, "{}: needs 1 or 3 channels, the images have {}", describe(), input[0]);
  return input;
}

void ColorJitter::apply(Image& image, Draws& draws) const {
  // A random order of the four adjustments (torch.randperm(4)), then each one's factor, as torchvision.
  int order[4] = {0, 1, 2, 3};
  for (int i = 3; i > 0; --i) std::swap(order[i], order[draws.below(i + 1)]);
  const auto factor = [&](double x) { return x > 0 ? draws.uniform(std::max(0.0, 1.0 - x), 1.0 + x) : 1.0; };
  const double b = factor(options_.brightness), c = factor(options_.contrast), s = factor(options_.saturation);
  const double h = options_.hue > 0 ? draws.uniform(-options_.hue, options_.hue) : 0.0;
  for (int op : order) {
    if (op == 0 && options_.brightness > 0) functional::adjust_brightness(image, b);
    if (op == 1 && options_.contrast > 0) functional::adjust_contrast(image, c);
    if (op == 2 && options_.saturation > 0) functional::adjust_saturation(image, s);
    if (op == 3 && options_.hue > 0) functional::adjust_hue(image, h);
  }
}

// RandomRotation ----------------------------------------------------------------------------------

RandomRotation::RandomRotation(double degrees, RandomRotationOptions options) : degrees_(degrees), options_(options) {
  ACCRUE_CHECK(degrees >= 0, "RandomRotation: degrees {} is negative (the range is [-degrees, degrees])", degrees);
  ACCRUE_CHECK(options_.interpolation != Interpolation::bicubic, "RandomRotation: takes nearest or bilinear");
}
std::string RandomRotation::describe() const {
  return fmt::format("RandomRotation(degrees={}, interpolation={}, fill={})", degrees_, name_of(options_.interpolation),
                     options_.fill);
}
void RandomRotation::apply(Image& image, Draws& draws) const {
  image = functional::rotate(image, draws.uniform(-degrees_, degrees_), options_.interpolation, options_.fill);
}

// Normalize, Resize, CenterCrop, Lambda -----------------------------------------------------------

Normalize::Normalize(std::vector<float> mean, std::vector<float> std) : mean_(std::move(mean)), std_(std::move(std)) {
  ACCRUE_CHECK(mean_.size() == std_.size() && !mean_.empty(), "Normalize: {} means but {} standard deviations",
               mean_.size(), std_.size());
  for (float s : std_) ACCRUE_CHECK(s > 0, "Normalize: standard deviation {} must be positive", s);
}
std::string Normalize::describe() const { return fmt::format("Normalize(mean=[{}], std=[{}])", fmt::join(mean_, ", "), fmt::join(std_, ", ")); }
Shape Normalize::output_shape(const Shape& input) const {
  check_image(input, describe());
  ACCRUE_CHECK_SHAPE(input[0] == static_cast<std::int64_t>(mean_.size()), "{}: the images have {} channels",
                     describe(), input[0]);
  return input;
}
void Normalize::apply(Image& image, Draws&) const { functional::normalize(image, mean_, std_); }

Resize::Resize(std::int64_t size, ResizeOptions options) : Resize(std::nullopt, size, options) {
  ACCRUE_CHECK(size >= 1, "Resize: the shorter side {} must be at least 1", size);
}
Resize::Resize(Size2 size, ResizeOptions options) : Resize(std::optional{size}, 0, options) { check_size(size, "Resize"); }
Resize::Resize(std::optional<Size2> size, std::int64_t edge, ResizeOptions options)
    : size_(size), edge_(edge), options_(options) {}
Resize Resize::smaller_edge(std::int64_t size, ResizeOptions options) { return Resize{size, options}; }
std::string Resize::describe() const {
  return fmt::format("Resize(size={}, interpolation={}, antialias={})", size_ ? size_->str() : std::to_string(edge_),
                     name_of(options_.interpolation), options_.antialias);
}
Shape Resize::output_shape(const Shape& input) const {
  check_image(input, describe());
  if (size_) return {input[0], size_->h, size_->w};
  // torchvision: the smaller edge becomes `edge`, the longer int(edge * long / short).
  const std::int64_t h = input[1], w = input[2];
  const std::int64_t shorter = std::min(h, w), longer = std::max(h, w);
  const auto other = static_cast<std::int64_t>(static_cast<double>(edge_) * static_cast<double>(longer) /
                                               static_cast<double>(shorter));
  return w <= h ? Shape{input[0], other, edge_} : Shape{input[0], edge_, other};
}
void Resize::apply(Image& image, Draws&) const {
  const Shape out = output_shape(image.shape());
  image = functional::resize(image, {out[1], out[2]}, options_.interpolation, options_.antialias);
}

CenterCrop::CenterCrop(Size2 size) : size_(size) { check_size(size, "CenterCrop"); }
std::string CenterCrop::describe() const { return fmt::format("CenterCrop(size={})", size_.str()); }
Shape CenterCrop::output_shape(const Shape& input) const {
  check_image(input, describe());
  return {input[0], size_.h, size_.w};
}
void CenterCrop::apply(Image& image, Draws&) const { image = functional::center_crop(image, size_); }

Lambda::Lambda(std::string name, Function function, std::function<Shape(const Shape&)> output_shape)
    : name_(std::move(name)), function_(std::move(function)), shape_(std::move(output_shape)) {
  ACCRUE_CHECK(static_cast<bool>(function_), "Lambda '{}': the function is empty", name_);
}

}  // namespace accrue::transforms

namespace accrue {

Dataset Dataset::map(const transforms::Compose& pipeline) const {
  Dataset out{std::make_shared<const transforms::TransformSource>(*this, pipeline)};
  out.weights_ = weights_;
  out.meaning_ = meaning_;
  return out;
}

}  // namespace accrue
