#include "augmentation.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "preprocessing.hpp"
#include "../../framework/core/error.hpp"
#include "../../framework/ops/ops.hpp"
#include "../../kernels/cpu/parallel.hpp"
#include "../layer_registry.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

// ---- AugmentationKeys ------------------------------------------------------------------------

namespace {
thread_local const AugmentationKeys* innermost = nullptr;
}  // namespace

AugmentationKeys::AugmentationKeys(std::uint64_t seed, std::int64_t epoch, std::span<const std::int64_t> samples)
    : seed_(seed), epoch_(epoch), samples_(samples), outer_(innermost) {
  innermost = this;
}

AugmentationKeys::~AugmentationKeys() { innermost = outer_; }

const AugmentationKeys* AugmentationKeys::current() { return innermost; }

// ---- RandomAugmentation ----------------------------------------------------------------------

// FNV-1a of the name, kept negative so that it never meets a dataset transform's position (>= 0).
int RandomAugmentation::stream() const {
  std::uint32_t h = 2166136261u;
  for (const char c : name()) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return -1 - static_cast<int>(h & 0x3FFFFFFFu);
}

Shape RandomAugmentation::build(const Shape& input_shape, Generator&) {
  detail::require_image(input_shape, *this);
  return augmented_shape(input_shape);
}

Tensor RandomAugmentation::forward(const Tensor& x) {
  if (!training()) return inference(x);
  ACCRUE_CHECK(!x.requires_grad(),
               "{} augments data: put it before the layers that have weights, since no gradient passes through it",
               describe());
  const std::int64_t n = x.size(0);
  const AugmentationKeys* keys = AugmentationKeys::current();
  // Outside fit's scope, a key of this batch's own: rows are the samples.
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;
  if (keys != nullptr) {
    ACCRUE_CHECK(static_cast<std::int64_t>(keys->samples().size()) == n,
                 "{}: the batch holds {} samples, but its sample list {}", describe(), n, keys->samples().size());
    seed = keys->seed(), epoch = keys->epoch();
  } else {
    seed = (static_cast<std::uint64_t>(generator().next_u32()) << 32) | generator().next_u32();
  }
  const Tensor on_cpu = x.to(Device::cpu());
  const Tensor in = on_cpu.dtype() == DType::f32 ? on_cpu : ops::cast(on_cpu, DType::f32);
  const Shape sample = augmented_shape(x.shape().drop_front());
  Tensor out = Tensor::empty(sample.prepend(n), TensorOptions{.dtype = DType::f32});
  const auto* src = static_cast<const float*>(in.data_ptr());
  auto* dst = static_cast<float*>(out.data_ptr());
  const std::int64_t in_size = in.numel() / std::max<std::int64_t>(n, 1), out_size = sample.numel();
  const int key = stream();
  kernels::cpu::parallel_for(n, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      transforms::Image image(in.size(1), in.size(2), in.size(3));
      std::memcpy(image.pixels.data(), src + r * in_size, static_cast<std::size_t>(in_size) * sizeof(float));
      transforms::Image result(sample[0], sample[1], sample[2]);
      transforms::Draws draws(seed, epoch, keys != nullptr ? keys->samples()[static_cast<std::size_t>(r)] : r, key);
      augment(image, result, draws);
      std::memcpy(dst + r * out_size, result.pixels.data(), static_cast<std::size_t>(out_size) * sizeof(float));
    }
  });
  return out.to(x.device());
}

// Inference: the identity, no node.
std::string RandomAugmentation::to_onnx(onnx::Graph&, const std::string& x) const { return x; }

// A new output in training, read from a CPU copy of the input; nothing kept, since no gradient
// passes.
LayerMemoryUse RandomAugmentation::memory_use(const LayerMemoryQuery& q) const {
  return {.output_dtype = DType::f32,
          .keeps_input = false,
          .keeps_output = false,
          .forward_scratch = q.device.is_cpu() ? 0 : q.input_bytes() + q.bytes(output_shape(), DType::f32)};
}

// ---- RandomFlip ------------------------------------------------------------------------------

namespace {

std::string flip_mode_name(FlipMode mode) {
  switch (mode) {
    case FlipMode::horizontal: return "horizontal";
    case FlipMode::vertical: return "vertical";
    case FlipMode::horizontal_and_vertical: return "horizontal_and_vertical";
  }
  return "horizontal_and_vertical";
}

}  // namespace

RandomFlip::RandomFlip(FlipMode mode, RandomFlipOptions options) : mode_(mode) { set_name(options.name); }

LayerConfig RandomFlip::config() const { return {{"mode", flip_mode_name(mode_)}}; }

RandomFlip RandomFlip::from_config(const ConfigReader& c) {
  const std::string mode = c.text("mode");
  for (auto m : {FlipMode::horizontal, FlipMode::vertical, FlipMode::horizontal_and_vertical})
    if (flip_mode_name(m) == mode) return RandomFlip{m};
  throw ValueError(fmt::format("RandomFlip: mode '{}' is none of horizontal, vertical, horizontal_and_vertical", mode));
}

// Both draws are made whatever the mode, so that a mode's flips do not depend on the other's.
void RandomFlip::augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const {
  const bool horizontal = draws.uniform() < 0.5, vertical = draws.uniform() < 0.5;
  out = in;
  if (horizontal && mode_ != FlipMode::vertical) transforms::functional::hflip(out);
  if (vertical && mode_ != FlipMode::horizontal) transforms::functional::vflip(out);
}

// ---- RandomCrop ------------------------------------------------------------------------------

RandomCrop::RandomCrop(Size2 size, RandomCropOptions options) : size_(size) {
  set_name(options.name);
  detail::check_size(size, "RandomCrop");
}

LayerConfig RandomCrop::config() const { return {{"size", size_option(size_)}}; }

RandomCrop RandomCrop::from_config(const ConfigReader& c) { return RandomCrop{c.size("size")}; }

void RandomCrop::augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const {
  if (in.height < size_.h || in.width < size_.w) {
    const auto w = transforms::functional::aspect_ratio_window(in.height, in.width, size_);
    out = transforms::functional::resize(transforms::functional::crop(in, w.top, w.left, w.height, w.width), size_);
    return;
  }
  const std::int64_t top = draws.below(in.height - size_.h + 1), left = draws.below(in.width - size_.w + 1);
  out = transforms::functional::crop(in, top, left, size_.h, size_.w);
}

Tensor RandomCrop::inference(const Tensor& x) const {
  if (x.size(2) == size_.h && x.size(3) == size_.w) return x;
  return detail::resize_images(x, size_, transforms::Interpolation::bilinear, true, true);
}

std::string RandomCrop::to_onnx(onnx::Graph& g, const std::string& x) const {
  const Shape& in = input_shape();
  if (in[1] == size_.h && in[2] == size_.w && !g.any_image_size(x)) return x;
  return detail::resize_images_onnx(g, x, in, size_, transforms::Interpolation::bilinear, true, true);
}

// ---- RandomContrast --------------------------------------------------------------------------

namespace {

void check_value_range(const ValueRangeOptions& o, const char* layer) {
  ACCRUE_CHECK(std::isfinite(o.low) && std::isfinite(o.high) && o.low < o.high,
               "{}: the value range [{}, {}] must be finite, low below high", layer, o.low, o.high);
}

LayerConfig value_range_config(const ValueRangeOptions& o) {
  return {{"value_low", float_option(o.low)}, {"value_high", float_option(o.high)}};
}

ValueRangeOptions value_range_from(const ConfigReader& c) { return {.low = c.real("value_low"), .high = c.real("value_high")}; }

}  // namespace

RandomContrast::RandomContrast(double factor, ValueRangeOptions options) : factor_(factor), options_(std::move(options)) {
  set_name(options_.name);
  ACCRUE_CHECK(factor >= 0.0 && factor <= 1.0, "RandomContrast{{{}}}: the factor must be in [0, 1]", factor);
  check_value_range(options_, "RandomContrast");
}

LayerConfig RandomContrast::config() const {
  LayerConfig c{{"factor", factor_}};
  for (auto& entry : value_range_config(options_)) c.push_back(std::move(entry));
  return c;
}

RandomContrast RandomContrast::from_config(const ConfigReader& c) {
  return RandomContrast{c.number("factor"), value_range_from(c)};
}

void RandomContrast::augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const {
  const auto f = static_cast<float>(draws.uniform(1.0 - factor_, 1.0 + factor_));
  out = in;
  const std::int64_t plane = in.height * in.width;
  for (std::int64_t c = 0; c < in.channels; ++c) {
    float* p = out.row(c, 0);
    double sum = 0.0;
    for (std::int64_t k = 0; k < plane; ++k) sum += p[k];
    const auto mean = static_cast<float>(sum / static_cast<double>(plane));
    for (std::int64_t k = 0; k < plane; ++k) p[k] = std::clamp((p[k] - mean) * f + mean, options_.low, options_.high);
  }
}

// ---- RandomBrightness ------------------------------------------------------------------------

RandomBrightness::RandomBrightness(FactorRange factor, ValueRangeOptions options)
    : factor_(factor), options_(std::move(options)) {
  set_name(options_.name);
  ACCRUE_CHECK(factor.lower >= -1.0 && factor.upper <= 1.0 && factor.lower <= factor.upper,
               "RandomBrightness{{[{}, {}]}}: the factors must lie in [-1, 1], lower first", factor.lower, factor.upper);
  check_value_range(options_, "RandomBrightness");
}

LayerConfig RandomBrightness::config() const {
  LayerConfig c{{"lower", factor_.lower}, {"upper", factor_.upper}};
  for (auto& entry : value_range_config(options_)) c.push_back(std::move(entry));
  return c;
}

RandomBrightness RandomBrightness::from_config(const ConfigReader& c) {
  return RandomBrightness{{c.number("lower"), c.number("upper")}, value_range_from(c)};
}

void RandomBrightness::augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const {
  const auto delta = static_cast<float>(draws.uniform(factor_.lower, factor_.upper) * (options_.high - options_.low));
  out = in;
  for (float& p : out.pixels) p = std::clamp(p + delta, options_.low, options_.high);
}

}  // namespace accrue::layers
