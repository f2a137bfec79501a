// The deterministic image functions of transforms.hpp, written after torchvision 0.14's tensor
// functions (transforms/functional_tensor.py) and torch's antialiased interpolation
// (aten/src/ATen/native/cpu/UpSampleKernel.cpp), which tests/data/make_transform_reference.py
// checks them against.

#include <algorithm>
#include <cmath>
#include <numbers>

#include "../transforms.hpp"
#include "../../framework/core/error.hpp"

namespace accrue::transforms::functional {
namespace {

std::int64_t reflect_index(std::int64_t i, std::int64_t n, PaddingMode mode) {
  switch (mode) {
    case PaddingMode::edge: return std::clamp<std::int64_t>(i, 0, n - 1);
    case PaddingMode::reflect: {  // d c b | a b c d | c b a
      if (n == 1) return 0;
      const std::int64_t period = 2 * (n - 1);
      std::int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
    case PaddingMode::symmetric: {  // c b a | a b c d | d c b
      const std::int64_t period = 2 * n;
      std::int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - 1 - m;
    }
    case PaddingMode::constant: break;
  }
  return -1;
}

// Weights of an output pixel over a run of input pixels: torch's _compute_weights_aa, the filter
// stretched over the whole footprint when shrinking (antialias) or not.
// Per output pixel, the run of input pixels it reads and their weights: indices past an edge are
// folded onto the edge pixel (torch clamps them), so every run lies inside the input.
struct Taps {
  std::vector<std::int64_t> first;  // per output pixel
  std::vector<std::int64_t> count;  // per output pixel
  std::vector<float> weights;       // `count` weights per output pixel, `stride` apart
  std::int64_t stride = 0;
};

double filter(Interpolation interpolation, bool antialias, double x) {
  x = std::abs(x);
  if (interpolation == Interpolation::bilinear) return x < 1.0 ? 1.0 - x : 0.0;
  const double a = antialias ? -0.5 : -0.75;  // PIL's antialiased bicubic, and torch's plain one
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// torch's _compute_weights_aa (the filter stretched over the whole footprint when shrinking with
// antialias), or align_corners=False sampling without it.
Taps filter_taps(std::int64_t in, std::int64_t out, Interpolation interpolation, bool antialias) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double half = interpolation == Interpolation::bilinear ? 1.0 : 2.0;
  const bool stretch = antialias && scale >= 1.0;
  const double support = stretch ? half * scale : half;
  const double inv = stretch ? 1.0 / scale : 1.0;
  Taps taps;
  taps.stride = static_cast<std::int64_t>(std::ceil(support)) * 2 + 1;
  taps.first.resize(static_cast<std::size_t>(out));
  taps.count.resize(static_cast<std::size_t>(out));
  taps.weights.assign(static_cast<std::size_t>(out * taps.stride), 0.0f);
  std::vector<double> w(static_cast<std::size_t>(taps.stride));
  for (std::int64_t i = 0; i < out; ++i) {
    const double center = scale * (static_cast<double>(i) + 0.5);
    std::int64_t lo, n;
    if (antialias) {
      lo = std::max<std::int64_t>(static_cast<std::int64_t>(center - support + 0.5), 0);
      n = std::min<std::int64_t>(static_cast<std::int64_t>(center + support + 0.5), in) - lo;
    } else {
      lo = static_cast<std::int64_t>(std::floor(center - 0.5)) - static_cast<std::int64_t>(half) + 1;
      n = static_cast<std::int64_t>(2 * half);
    }
    n = std::min(n, taps.stride);
    double total = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
      w[static_cast<std::size_t>(j)] = filter(interpolation, antialias, (static_cast<double>(j + lo) - center + 0.5) * inv);
      total += w[static_cast<std::size_t>(j)];
    }
    const double norm = antialias && total != 0.0 ? 1.0 / total : 1.0;
    // Fold taps past the edges onto the edge pixels.
    const std::int64_t first = std::clamp<std::int64_t>(lo, 0, in - 1);
    const std::int64_t last = std::clamp<std::int64_t>(lo + n - 1, 0, in - 1);
    float* out_w = &taps.weights[static_cast<std::size_t>(i * taps.stride)];
    for (std::int64_t j = 0; j < n; ++j)
      out_w[std::clamp<std::int64_t>(lo + j, 0, in - 1) - first] += static_cast<float>(w[static_cast<std::size_t>(j)] * norm);
    taps.first[static_cast<std::size_t>(i)] = first;
    taps.count[static_cast<std::size_t>(i)] = n > 0 ? last - first + 1 : 0;
  }
  return taps;
}

// One pass of a separable resize along the width: each output pixel of a row a weighted run of
// input pixels of that row.
Image resample_rows(const Image& image, std::int64_t out, const Taps& taps) {
  Image r(image.channels, image.height, out);
  for (std::int64_t c = 0; c < image.channels; ++c)
    for (std::int64_t y = 0; y < image.height; ++y) {
      const float* row = image.row(c, y);
      float* dst = r.row(c, y);
      for (std::int64_t x = 0; x < out; ++x) {
        const float* w = &taps.weights[static_cast<std::size_t>(x * taps.stride)];
        const float* src = row + taps.first[static_cast<std::size_t>(x)];
        float sum = 0.0f;
        for (std::int64_t j = 0; j < taps.count[static_cast<std::size_t>(x)]; ++j) sum += w[j] * src[j];
        dst[x] = sum;
      }
    }
  return r;
}

// And along the height: each output row a weighted sum of input rows, over whole rows at once.
Image resample_columns(const Image& image, std::int64_t out, const Taps& taps) {
  Image r(image.channels, out, image.width);
  const std::int64_t width = image.width;
  for (std::int64_t c = 0; c < image.channels; ++c)
    for (std::int64_t y = 0; y < out; ++y) {
      float* dst = r.row(c, y);
      const float* w = &taps.weights[static_cast<std::size_t>(y * taps.stride)];
      for (std::int64_t j = 0; j < taps.count[static_cast<std::size_t>(y)]; ++j) {
        const float* src = image.row(c, taps.first[static_cast<std::size_t>(y)] + j);
        const float wj = w[j];
        for (std::int64_t x = 0; x < width; ++x) dst[x] += wj * src[x];
      }
    }
  return r;
}

// torch's interpolate(mode="nearest"): source pixel floor(dst x in / out).
Image resize_nearest(const Image& image, Size2 size) {
  Image r(image.channels, size.h, size.w);
  const float sy = static_cast<float>(image.height) / static_cast<float>(size.h);
  const float sx = static_cast<float>(image.width) / static_cast<float>(size.w);
  for (std::int64_t c = 0; c < image.channels; ++c)
    for (std::int64_t y = 0; y < size.h; ++y) {
      const auto iy = std::min(static_cast<std::int64_t>(std::floor(static_cast<float>(y) * sy)), image.height - 1);
      for (std::int64_t x = 0; x < size.w; ++x) {
        const auto ix = std::min(static_cast<std::int64_t>(std::floor(static_cast<float>(x) * sx)), image.width - 1);
        r.at(c, y, x) = image.at(c, iy, ix);
      }
    }
  return r;
}

float grayscale(const Image& image, std::int64_t y, std::int64_t x) {
  return 0.2989f * image.at(0, y, x) + 0.587f * image.at(1, y, x) + 0.114f * image.at(2, y, x);
}

// torchvision's _blend: factor * image + (1 - factor) * other, clamped to [0, 1].
float blend(float value, float other, double factor) {
  const auto f = static_cast<float>(factor);
  return std::clamp(f * value + (1.0f - f) * other, 0.0f, 1.0f);
}

void check_rgb(const Image& image, const char* what) {
  ACCRUE_CHECK_SHAPE(image.channels == 1 || image.channels == 3,
                     "transforms: {} needs an image of 1 or 3 channels, got {} channels", what, image.channels);
}

}  // namespace

Image crop(const Image& image, std::int64_t top, std::int64_t left, std::int64_t height, std::int64_t width, float fill) {
  // Outside the image is `fill`, as torchvision's crop pads a crop that does not fit. Each row is
  // a run of fill, a copy of the image's row and a run of fill.
  Image r(image.channels, height, width, fill);
  const std::int64_t x0 = std::clamp<std::int64_t>(-left, 0, width), x1 = std::clamp<std::int64_t>(image.width - left, x0, width);
  for (std::int64_t c = 0; c < image.channels; ++c)
    for (std::int64_t y = 0; y < height; ++y) {
      const std::int64_t sy = top + y;
      if (sy < 0 || sy >= image.height || x1 == x0) continue;
      std::copy_n(image.row(c, sy) + left + x0, x1 - x0, r.row(c, y) + x0);
    }
  return r;
}

Image pad(const Image& image, const std::int64_t pad[4], PaddingMode mode, float fill) {
  const std::int64_t height = image.height + pad[1] + pad[3], width = image.width + pad[0] + pad[2];
  if (mode == PaddingMode::constant) return crop(image, -pad[1], -pad[0], height, width, fill);
  ACCRUE_CHECK_SHAPE(mode != PaddingMode::reflect ||
                         (pad[0] < image.width && pad[2] < image.width && pad[1] < image.height && pad[3] < image.height),
                     "transforms: reflect padding of {} needs padding below the image's size ({}x{})",
                     fmt::format("[{}, {}, {}, {}]", pad[0], pad[1], pad[2], pad[3]), image.height, image.width);
  Image r(image.channels, height, width);
  std::vector<std::int64_t> columns(static_cast<std::size_t>(width));
  for (std::int64_t x = 0; x < width; ++x) columns[static_cast<std::size_t>(x)] = reflect_index(x - pad[0], image.width, mode);
  for (std::int64_t c = 0; c < image.channels; ++c)
    for (std::int64_t y = 0; y < height; ++y) {
      const float* from = image.row(c, reflect_index(y - pad[1], image.height, mode));
      float* to = r.row(c, y);
      for (std::int64_t x = 0; x < width; ++x) to[x] = from[columns[static_cast<std::size_t>(x)]];
    }
  return r;
}

void hflip(Image& image) {
  for (std::int64_t c = 0; c < image.channels; ++c)
    for (std::int64_t y = 0; y < image.height; ++y) {
      float* row = &image.at(c, y, 0);
      std::reverse(row, row + image.width);
    }
}

void vflip(Image& image) {
  for (std::int64_t c = 0; c < image.channels; ++c)
    for (std::int64_t y = 0; y < image.height / 2; ++y)
      std::swap_ranges(&image.at(c, y, 0), &image.at(c, y, 0) + image.width, &image.at(c, image.height - 1 - y, 0));
}

Image resize(const Image& image, Size2 size, Interpolation interpolation, bool antialias) {
  ACCRUE_CHECK_SHAPE(size.h >= 1 && size.w >= 1 && image.height >= 1 && image.width >= 1,
                     "transforms: resizing a {}x{} image to {}x{}", image.height, image.width, size.h, size.w);
  if (interpolation == Interpolation::nearest) return resize_nearest(image, size);
  if (size.h == image.height && size.w == image.width) return image;
  // Horizontal first, then vertical, as torch and PIL run the two passes.
  const Image wide =
      size.w == image.width ? image : resample_rows(image, size.w, filter_taps(image.width, size.w, interpolation, antialias));
  return size.h == image.height
             ? wide
             : resample_columns(wide, size.h, filter_taps(image.height, size.h, interpolation, antialias));
}

std::vector<float> resize_matrix(std::int64_t in, std::int64_t out, Interpolation interpolation, bool antialias) {
  ACCRUE_CHECK_SHAPE(in >= 1 && out >= 1, "transforms: resizing {} pixels to {}", in, out);
  std::vector<float> m(static_cast<std::size_t>(out * in), 0.0f);
  if (interpolation == Interpolation::nearest) {
    // resize_nearest's source pixel, computed as it computes it.
    const float s = static_cast<float>(in) / static_cast<float>(out);
    for (std::int64_t i = 0; i < out; ++i)
      m[static_cast<std::size_t>(i * in + std::min(static_cast<std::int64_t>(std::floor(static_cast<float>(i) * s)), in - 1))] = 1.0f;
    return m;
  }
  if (in == out) {
    for (std::int64_t i = 0; i < out; ++i) m[static_cast<std::size_t>(i * in + i)] = 1.0f;
    return m;
  }
  const Taps taps = filter_taps(in, out, interpolation, antialias);
  for (std::int64_t i = 0; i < out; ++i)
    for (std::int64_t j = 0; j < taps.count[static_cast<std::size_t>(i)]; ++j)
      m[static_cast<std::size_t>(i * in + taps.first[static_cast<std::size_t>(i)] + j)] =
          taps.weights[static_cast<std::size_t>(i * taps.stride + j)];
  return m;
}

// In whole numbers (Keras divides in float32), so that an ONNX graph computes the same window.
Window aspect_ratio_window(std::int64_t height, std::int64_t width, Size2 target) {
  std::int64_t h = height, w = height * target.w / target.h;
  if (w > width) {
    w = width;
    h = width * target.h / target.w;
  }
  h = std::max<std::int64_t>(h, 1), w = std::max<std::int64_t>(w, 1);
  return {(height - h) / 2, (width - w) / 2, h, w};
}

Image center_crop(const Image& image, Size2 size) {
  Image source = image;
  if (size.w > image.width || size.h > image.height) {
    const std::int64_t dw = std::max<std::int64_t>(size.w - image.width, 0), dh = std::max<std::int64_t>(size.h - image.height, 0);
    const std::int64_t padding[4] = {dw / 2, dh / 2, (dw + 1) / 2, (dh + 1) / 2};
    source = pad(image, padding, PaddingMode::constant, 0.0f);
  }
  // Python's round: halves to even.
  const auto top = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(source.height - size.h) / 2.0));
  const auto left = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(source.width - size.w) / 2.0));
  return crop(source, top, left, size.h, size.w);
}

void adjust_brightness(Image& image, double factor) {
  for (float& v : image.pixels) v = blend(v, 0.0f, factor);
}

void adjust_contrast(Image& image, double factor) {
  check_rgb(image, "adjust_contrast");
  double sum = 0.0;
  for (std::int64_t y = 0; y < image.height; ++y)
    for (std::int64_t x = 0; x < image.width; ++x) sum += image.channels == 3 ? grayscale(image, y, x) : image.at(0, y, x);
  const auto mean = static_cast<float>(sum / static_cast<double>(image.height * image.width));
  for (float& v : image.pixels) v = blend(v, mean, factor);
}

void adjust_saturation(Image& image, double factor) {
  check_rgb(image, "adjust_saturation");
  if (image.channels == 1) return;
  for (std::int64_t y = 0; y < image.height; ++y)
    for (std::int64_t x = 0; x < image.width; ++x) {
      const float grey = grayscale(image, y, x);
      for (std::int64_t c = 0; c < 3; ++c) image.at(c, y, x) = blend(image.at(c, y, x), grey, factor);
    }
}

void adjust_hue(Image& image, double factor) {
  ACCRUE_CHECK(factor >= -0.5 && factor <= 0.5, "transforms: hue factor {} is not in [-0.5, 0.5]", factor);
  check_rgb(image, "adjust_hue");
  if (image.channels == 1) return;
  for (std::int64_t y = 0; y < image.height; ++y)
    for (std::int64_t x = 0; x < image.width; ++x) {
      // torchvision's _rgb2hsv, the hue moved, then _hsv2rgb.
      const float r = image.at(0, y, x), g = image.at(1, y, x), b = image.at(2, y, x);
      const float maxc = std::max({r, g, b}), minc = std::min({r, g, b});
      const bool flat = maxc == minc;
      const float cr = maxc - minc;
      const float s = cr / (flat ? 1.0f : maxc);
      const float div = flat ? 1.0f : cr;
      const float rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
      float h = maxc == r ? bc - gc : maxc == g ? 2.0f + rc - bc : 4.0f + gc - rc;
      h = std::fmod(h / 6.0f + 1.0f, 1.0f);
      h = h + static_cast<float>(factor);
      h = h - std::floor(h);  // Python's % 1.0
      const float v = maxc;
      const float i = std::floor(h * 6.0f);
      const float f = h * 6.0f - i;
      const float p = std::clamp(v * (1.0f - s), 0.0f, 1.0f);
      const float q = std::clamp(v * (1.0f - s * f), 0.0f, 1.0f);
      const float t = std::clamp(v * (1.0f - s * (1.0f - f)), 0.0f, 1.0f);
      const int sector = ((static_cast<int>(i) % 6) + 6) % 6;
      const float rgb[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
      for (int c = 0; c < 3; ++c) image.at(c, y, x) = rgb[sector][c];
    }
}

Image rotate(const Image& image, double angle, Interpolation interpolation, float fill) {
  ACCRUE_CHECK(interpolation != Interpolation::bicubic, "transforms: rotate takes nearest or bilinear interpolation");
  // torchvision's inverse affine matrix for a rotation about the centre, as a float32 grid in
  // [-1, 1] sampled by grid_sample with align_corners=False. The float arithmetic is torch's: a
  // source coordinate on a half (a pixel on the centre row or column) rounds as torch's does.
  const double theta = angle * std::numbers::pi / 180.0;
  const auto cs = static_cast<float>(std::cos(theta)), sn = static_cast<float>(std::sin(theta));
  const auto w = static_cast<float>(image.width), h = static_cast<float>(image.height);
  const float a = cs / (0.5f * w), b = -sn / (0.5f * w), c = sn / (0.5f * h), d = cs / (0.5f * h);
  Image r(image.channels, image.height, image.width);
  for (std::int64_t y = 0; y < image.height; ++y)
    for (std::int64_t x = 0; x < image.width; ++x) {
      const float xb = static_cast<float>(x) - w * 0.5f + 0.5f, yb = static_cast<float>(y) - h * 0.5f + 0.5f;
      const float gx = xb * a + yb * b, gy = xb * c + yb * d;
      const float sx = ((gx + 1.0f) * w - 1.0f) / 2.0f, sy = ((gy + 1.0f) * h - 1.0f) / 2.0f;
      if (interpolation == Interpolation::nearest) {
        const auto ix = static_cast<std::int64_t>(std::nearbyint(sx)), iy = static_cast<std::int64_t>(std::nearbyint(sy));
        const bool inside = ix >= 0 && ix < image.width && iy >= 0 && iy < image.height;
        for (std::int64_t k = 0; k < image.channels; ++k) r.at(k, y, x) = inside ? image.at(k, iy, ix) : fill;
        continue;
      }
      const auto x0 = static_cast<std::int64_t>(std::floor(sx)), y0 = static_cast<std::int64_t>(std::floor(sy));
      const float fx = sx - static_cast<float>(x0), fy = sy - static_cast<float>(y0);
      for (std::int64_t k = 0; k < image.channels; ++k) {
        float value = 0.0f, mask = 0.0f;  // torchvision samples a channel of ones beside the image
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) {
            const std::int64_t px = x0 + dx, py = y0 + dy;
            if (px < 0 || px >= image.width || py < 0 || py >= image.height) continue;
            const float wt = (dx ? fx : 1.0f - fx) * (dy ? fy : 1.0f - fy);
            value += wt * image.at(k, py, px);
            mask += wt;
          }
        r.at(k, y, x) = value * mask + (1.0f - mask) * fill;
      }
    }
  return r;
}

void normalize(Image& image, const std::vector<float>& mean, const std::vector<float>& std) {
  ACCRUE_CHECK_SHAPE(static_cast<std::int64_t>(mean.size()) == image.channels &&
                         static_cast<std::int64_t>(std.size()) == image.channels,
                     "transforms: Normalize has {} means and {} standard deviations for an image of {} channels",
                     mean.size(), std.size(), image.channels);
  const std::size_t plane = static_cast<std::size_t>(image.height * image.width);
  for (std::size_t c = 0; c < mean.size(); ++c)
    for (std::size_t k = 0; k < plane; ++k) {
      float& v = image.pixels[c * plane + k];
      v = (v - mean[c]) / std[c];
    }
}

}  // namespace accrue::transforms::functional
