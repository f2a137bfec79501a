// RandomRotation and RandomZoom (augmentation.hpp): each output pixel reads the input at the
// point an affine map about the image's centre sends it to, between pixels bilinearly (or the
// nearest pixel), past the edges as the fill mode says.

#include <cmath>
#include <numbers>

#include "augmentation.hpp"
#include "preprocessing.hpp"
#include "../../framework/core/error.hpp"
#include "../layer_registry.hpp"

namespace accrue::layers {
namespace {

// Where an output pixel reads, from its offset (dx, dy) from the centre: the input's point at
// offset (xx dx + xy dy, yx dx + yy dy) from the centre.
struct Affine {
  double xx = 1, xy = 0, yx = 0, yy = 1;
};

// Index i of an axis of n pixels as the fill mode folds it back; -1 for constant outside.
std::int64_t folded(std::int64_t i, std::int64_t n, FillMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case FillMode::nearest: return i < 0 ? 0 : n - 1;
    case FillMode::wrap: return ((i % n) + n) % n;
    case FillMode::reflect: {  // d c b a | a b c d | d c b a
      const std::int64_t period = 2 * n, m = ((i % period) + period) % period;
      return m < n ? m : period - 1 - m;
    }
    case FillMode::constant: break;
  }
  return -1;
}

float pixel(const float* plane, std::int64_t y, std::int64_t x, std::int64_t h, std::int64_t w, const AffineOptions& o) {
  const std::int64_t fy = folded(y, h, o.fill_mode), fx = folded(x, w, o.fill_mode);
  return fy < 0 || fx < 0 ? o.fill_value : plane[fy * w + fx];
}

void sample_affine(const transforms::Image& in, transforms::Image& out, const Affine& m, const AffineOptions& o) {
  const double cy = static_cast<double>(in.height - 1) / 2.0, cx = static_cast<double>(in.width - 1) / 2.0;
  const bool nearest = o.interpolation == transforms::Interpolation::nearest;
  for (std::int64_t c = 0; c < in.channels; ++c) {
    const float* plane = in.row(c, 0);
    for (std::int64_t y = 0; y < out.height; ++y) {
      float* dst = out.row(c, y);
      const double dy = static_cast<double>(y) - cy;
      for (std::int64_t x = 0; x < out.width; ++x) {
        const double dx = static_cast<double>(x) - cx;
        const double sx = cx + m.xx * dx + m.xy * dy, sy = cy + m.yx * dx + m.yy * dy;
        if (nearest) {
          dst[x] = pixel(plane, std::llround(sy), std::llround(sx), in.height, in.width, o);
          continue;
        }
        const double x0 = std::floor(sx), y0 = std::floor(sy);
        const auto ix = static_cast<std::int64_t>(x0), iy = static_cast<std::int64_t>(y0);
        const auto fx = static_cast<float>(sx - x0), fy = static_cast<float>(sy - y0);
        const float top = pixel(plane, iy, ix, in.height, in.width, o) * (1 - fx) + pixel(plane, iy, ix + 1, in.height, in.width, o) * fx;
        const float bottom =
            pixel(plane, iy + 1, ix, in.height, in.width, o) * (1 - fx) + pixel(plane, iy + 1, ix + 1, in.height, in.width, o) * fx;
        dst[x] = top * (1 - fy) + bottom * fy;
      }
    }
  }
}

const char* fill_mode_name(FillMode mode) {
  switch (mode) {
    case FillMode::reflect: return "reflect";
    case FillMode::wrap: return "wrap";
    case FillMode::nearest: return "nearest";
    case FillMode::constant: return "constant";
  }
  return "reflect";
}

void check_affine(const AffineOptions& o, const char* layer) {
  ACCRUE_CHECK(o.interpolation != transforms::Interpolation::bicubic,
               "{}: interpolation must be nearest or bilinear, not bicubic", layer);
  ACCRUE_CHECK(std::isfinite(o.fill_value), "{}: fill_value is not finite", layer);
}

void check_range(const FactorRange& r, double low, const char* what) {
  ACCRUE_CHECK(std::isfinite(r.lower) && std::isfinite(r.upper) && r.lower <= r.upper && r.lower >= low,
               "{}: the range [{}, {}] must be finite, lower first, not below {}", what, r.lower, r.upper, low);
}

void add_affine_config(LayerConfig& c, const AffineOptions& o) {
  c.emplace_back("fill_mode", std::string(fill_mode_name(o.fill_mode)));
  c.emplace_back("interpolation", detail::interpolation_name(o.interpolation));
  c.emplace_back("fill_value", float_option(o.fill_value));
}

AffineOptions affine_from(const ConfigReader& c) {
  AffineOptions o{.interpolation = detail::interpolation_named(c.text("interpolation")), .fill_value = c.real("fill_value")};
  const std::string mode = c.text("fill_mode");
  for (auto m : {FillMode::reflect, FillMode::wrap, FillMode::nearest, FillMode::constant})
    if (mode == fill_mode_name(m)) o.fill_mode = m;
  ACCRUE_CHECK(mode == fill_mode_name(o.fill_mode), "fill_mode '{}' is none of reflect, wrap, nearest, constant", mode);
  return o;
}

}  // namespace

// ---- RandomRotation --------------------------------------------------------------------------

RandomRotation::RandomRotation(FactorRange factor, AffineOptions options) : factor_(factor), options_(std::move(options)) {
  set_name(options_.name);
  check_range(factor_, -1e9, "RandomRotation");
  check_affine(options_, "RandomRotation");
}

LayerConfig RandomRotation::config() const {
  LayerConfig c{{"lower", factor_.lower}, {"upper", factor_.upper}};
  add_affine_config(c, options_);
  return c;
}

RandomRotation RandomRotation::from_config(const ConfigReader& c) {
  return RandomRotation{{c.number("lower"), c.number("upper")}, affine_from(c)};
}

// Counter-clockwise on the screen (y grows downwards): the output's offset turned back by the
// angle is where it reads.
void RandomRotation::augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const {
  const double angle = draws.uniform(factor_.lower, factor_.upper) * 2.0 * std::numbers::pi;
  const double cos = std::cos(angle), sin = std::sin(angle);
  sample_affine(in, out, {.xx = cos, .xy = -sin, .yx = sin, .yy = cos}, options_);
}

// ---- RandomZoom ------------------------------------------------------------------------------

RandomZoom::RandomZoom(FactorRange height_factor, std::optional<FactorRange> width_factor, AffineOptions options)
    : height_(height_factor), width_(width_factor), options_(std::move(options)) {
  set_name(options_.name);
  check_range(height_, -1.0, "RandomZoom's height_factor");
  if (width_) check_range(*width_, -1.0, "RandomZoom's width_factor");
  check_affine(options_, "RandomZoom");
}

LayerConfig RandomZoom::config() const {
  LayerConfig c{{"height_lower", height_.lower}, {"height_upper", height_.upper}};
  if (width_) c.insert(c.end(), {{"width_lower", width_->lower}, {"width_upper", width_->upper}});
  else c.insert(c.end(), {{"width_lower", std::monostate{}}, {"width_upper", std::monostate{}}});
  add_affine_config(c, options_);
  return c;
}

RandomZoom RandomZoom::from_config(const ConfigReader& c) {
  std::optional<FactorRange> width;
  if (c.is_set("width_lower")) width = FactorRange{c.number("width_lower"), c.number("width_upper")};
  return RandomZoom{{c.number("height_lower"), c.number("height_upper")}, width, affine_from(c)};
}

// A zoom of z reads z times as far from the centre: out for z > 1. The width's draw is made even
// when it takes the height's, so that the two settings draw alike.
void RandomZoom::augment(const transforms::Image& in, transforms::Image& out, transforms::Draws& draws) const {
  const double zy = 1.0 + draws.uniform(height_.lower, height_.upper);
  const double drawn = draws.uniform();
  const double zx = width_ ? 1.0 + width_->lower + (width_->upper - width_->lower) * drawn : zy;
  sample_affine(in, out, {.xx = zx, .xy = 0, .yx = 0, .yy = zy}, options_);
}

}  // namespace accrue::layers
