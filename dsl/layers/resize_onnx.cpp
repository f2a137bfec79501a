// The resizing layers' ONNX form (preprocessing.hpp): two MatMuls with the taps of each axis.
// For images of the size the layer was built for the taps are constants; for images of any size
// (onnx::Graph::any_image_size) the graph computes them from the input's Shape, with the same
// formulas as transforms::functional::resize_matrix: the filter over the window each output pixel
// covers, normalized, with antialiasing; torch's two or four taps folded at the edges without;
// the pixel floor(i x in / out) for nearest. ONNX's Resize is not used: opset 17's has no
// antialiasing.

#include "preprocessing.hpp"
#include "../onnx.hpp"

namespace accrue::layers::detail {
namespace {

using transforms::Interpolation;

constexpr std::int64_t onnx_float = 1, onnx_int64 = 7;  // TensorProto data types

// Where an axis is resized from: the window [start, start + length) of its `in` pixels (int64
// tensors of one element).
struct Axis {
  std::string in, start, length;
};

std::string cast(onnx::Graph& g, const std::string& x, std::int64_t to) { return g.node("Cast", {x}, {{"to", to}}); }

// Axis `axis` of x's shape, as an int64 tensor of one element.
std::string dim(onnx::Graph& g, const std::string& shape, std::int64_t axis) {
  return g.node("Slice", {shape, g.ints({axis}), g.ints({axis + 1})});
}

// The filter of transforms::functional::resize at x (elementwise).
std::string filter(onnx::Graph& g, const std::string& x, Interpolation interpolation, bool antialias) {
  const std::string t = g.node("Abs", {x});
  if (interpolation == Interpolation::bilinear) return g.node("Relu", {g.node("Sub", {g.scalar(1.0f), t})});
  const float a = antialias ? -0.5f : -0.75f;
  const std::string t2 = g.node("Mul", {t, t});
  // |x| < 1: ((a + 2) t - (a + 3)) t^2 + 1; |x| < 2: (((t - 5) t + 8) t - 4) a; else 0.
  const std::string near =
      g.node("Add", {g.node("Mul", {g.node("Sub", {g.node("Mul", {t, g.scalar(a + 2.0f)}), g.scalar(a + 3.0f)}), t2}),
                     g.scalar(1.0f)});
  const std::string cubic = g.node("Sub", {g.node("Mul", {g.node("Add", {g.node("Mul", {g.node("Sub", {t, g.scalar(5.0f)}), t}),
                                                                        g.scalar(8.0f)}),
                                                         t}),
                                          g.scalar(4.0f)});
  const std::string far = g.node("Mul", {cubic, g.scalar(a)});
  return g.node("Where", {g.node("Less", {t, g.scalar(1.0f)}), near,
                          g.node("Where", {g.node("Less", {t, g.scalar(2.0f)}), far, g.scalar(0.0f)})});
}

// Rows one-hot over `length` pixels at the int64 `positions` (out): (out, length) of 0 and 1.
std::string one_hot(onnx::Graph& g, const std::string& positions, const std::string& length) {
  return g.node("OneHot", {positions, length, g.weight("off_on", {0.0f, 1.0f}, {2})});
}

// The (out, length) taps of the window: output pixel i's weights over the window's pixels.
std::string window_taps(onnx::Graph& g, const Axis& a, std::int64_t out, Interpolation interpolation, bool antialias) {
  const std::string length = cast(g, a.length, onnx_float);
  const std::string scale = g.node("Div", {length, g.scalar(static_cast<float>(out))});
  std::vector<float> index(static_cast<std::size_t>(out)), centre(index.size());
  for (std::int64_t i = 0; i < out; ++i) index[static_cast<std::size_t>(i)] = static_cast<float>(i), centre[static_cast<std::size_t>(i)] = static_cast<float>(i) + 0.5f;
  if (interpolation == Interpolation::nearest) {
    const std::string last = g.node("Sub", {length, g.scalar(1.0f)});
    const std::string source = g.node("Min", {g.node("Floor", {g.node("Mul", {g.weight("positions", index, {out}), scale})}), last});
    return one_hot(g, cast(g, source, onnx_int64), a.length);
  }
  const std::string centres = g.node("Mul", {g.weight("centres", centre, {out, 1}), scale});
  if (antialias) {
    // Over the whole window, normalized: the filter is zero past the footprint torch reads.
    const std::string pixels = g.node("Range", {g.scalar(0.0f), g.node("Squeeze", {length}), g.scalar(1.0f)});
    const std::string stretch = g.node("Min", {g.node("Div", {g.scalar(static_cast<float>(out)), length}), g.scalar(1.0f)});
    const std::string x = g.node("Mul", {g.node("Sub", {g.node("Add", {pixels, g.scalar(0.5f)}), centres}), stretch});
    const std::string w = filter(g, x, interpolation, antialias);
    return g.node("Div", {w, g.node("ReduceSum", {w, g.ints({1})}, {{"keepdims", std::int64_t{1}}})});
  }
  // Two (bilinear) or four (bicubic) taps from floor(centre - 0.5) - half + 1, those past an edge
  // added to the edge pixel.
  const int half = interpolation == Interpolation::bilinear ? 1 : 2;
  const std::string first = g.node("Sub", {g.node("Floor", {g.node("Sub", {centres, g.scalar(0.5f)})}), g.scalar(static_cast<float>(half - 1))});
  const std::string last = g.node("Squeeze", {g.node("Sub", {length, g.scalar(1.0f)})});
  std::string taps;
  for (int k = 0; k < 2 * half; ++k) {
    const std::string p = g.node("Add", {first, g.scalar(static_cast<float>(k))});
    const std::string weight = filter(g, g.node("Add", {g.node("Sub", {p, centres}), g.scalar(0.5f)}), interpolation, antialias);
    const std::string at = g.node("Reshape", {cast(g, g.node("Clip", {p, g.scalar(0.0f), last}), onnx_int64), g.ints({-1})});
    const std::string tap = g.node("Mul", {weight, one_hot(g, at, a.length)});
    taps = taps.empty() ? tap : g.node("Add", {taps, tap});
  }
  return taps;
}

// The (in, out) right operand of the axis's product: the window's taps transposed, padded with
// zero rows for the pixels outside the window.
std::string axis_taps(onnx::Graph& g, const Axis& a, std::int64_t out, Interpolation interpolation, bool antialias) {
  const std::string t = g.node("Transpose", {window_taps(g, a, out, interpolation, antialias)}, {{"perm", std::vector<std::int64_t>{1, 0}}});
  const std::string after = g.node("Sub", {g.node("Sub", {a.in, a.start}), a.length});
  return g.node("Pad", {t, g.node("Concat", {a.start, g.ints({0}), after, g.ints({0})}, {{"axis", std::int64_t{0}}})});
}

// transforms::functional::aspect_ratio_window in int64 arithmetic.
std::pair<Axis, Axis> aspect_window(onnx::Graph& g, const std::string& h, const std::string& w, Size2 target) {
  const std::string wide = g.node("Div", {g.node("Mul", {h, g.ints({target.w})}), g.ints({target.h})});
  const std::string too_wide = g.node("Greater", {wide, w});
  const std::string tall = g.node("Div", {g.node("Mul", {w, g.ints({target.h})}), g.ints({target.w})});
  const std::string width = g.node("Max", {g.node("Where", {too_wide, w, wide}), g.ints({1})});
  const std::string height = g.node("Max", {g.node("Where", {too_wide, tall, h}), g.ints({1})});
  const std::string top = g.node("Div", {g.node("Sub", {h, height}), g.ints({2})});
  const std::string left = g.node("Div", {g.node("Sub", {w, width}), g.ints({2})});
  return {{h, top, height}, {w, left, width}};
}

// (N, C, H, W) images resized from the windows to `size`: the width's product, then the height's.
std::string resize_windows(onnx::Graph& g, const std::string& x, const std::pair<Axis, Axis>& windows, Size2 size,
                           Interpolation interpolation, bool antialias) {
  const std::string wide = g.node("MatMul", {x, axis_taps(g, windows.second, size.w, interpolation, antialias)});
  const std::string tall = g.node("Transpose", {axis_taps(g, windows.first, size.h, interpolation, antialias)},
                                  {{"perm", std::vector<std::int64_t>{1, 0}}});
  return g.node("MatMul", {tall, wide});
}

std::pair<std::string, std::string> height_and_width(onnx::Graph& g, const std::string& x) {
  const std::string shape = g.node("Shape", {x});
  return {dim(g, shape, 2), dim(g, shape, 3)};
}

}  // namespace

std::string resize_any_size_onnx(onnx::Graph& g, const std::string& x, Size2 size, Interpolation interpolation,
                                 bool antialias, bool crop_to_aspect_ratio) {
  const auto [h, w] = height_and_width(g, x);
  const std::pair<Axis, Axis> windows =
      crop_to_aspect_ratio ? aspect_window(g, h, w, size) : std::pair<Axis, Axis>{{h, g.ints({0}), h}, {w, g.ints({0}), w}};
  return resize_windows(g, x, windows, size, interpolation, antialias);
}

// The central window when the image holds it, else the aspect window resized: one product per
// axis either way (the window's taps are the identity where its length is the output's).
std::string center_crop_any_size_onnx(onnx::Graph& g, const std::string& x, Size2 size) {
  const auto [h, w] = height_and_width(g, x);
  const auto [ya, xa] = aspect_window(g, h, w, size);
  const std::string small =
      g.node("Or", {g.node("Less", {h, g.ints({size.h})}), g.node("Less", {w, g.ints({size.w})})});
  const auto chosen = [&](const Axis& resized, const std::string& in, std::int64_t length) {
    const std::string start = g.node("Div", {g.node("Sub", {in, g.ints({length})}), g.ints({2})});
    return Axis{in, g.node("Where", {small, resized.start, start}), g.node("Where", {small, resized.length, g.ints({length})})};
  };
  return resize_windows(g, x, {chosen(ya, h, size.h), chosen(xa, w, size.w)}, size, Interpolation::bilinear, true);
}

}  // namespace accrue::layers::detail
