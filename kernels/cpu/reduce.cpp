#include <algorithm>
#include <array>
#include <vector>

#include "parallel.hpp"
#include "reduce.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {
namespace {
constexpr std::int64_t reduce_grain = 1 << 15;
}

void sum_dim(const float* x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, float* out,
             bool accumulate) {
  auto store = [&](float* o, double value) { *o = accumulate ? *o + static_cast<float>(value) : static_cast<float>(value); };
  if (inner == 1) {
    if (outer == 1) {
      // One long sum: partial sums per thread in double, combined in a fixed order.
      const int parts = std::max(1, static_cast<int>(std::min<std::int64_t>(num_threads(), D / reduce_grain)));
      std::vector<double> partial(static_cast<std::size_t>(parts), 0.0);
      parallel_tasks(parts, [&](int p) {
        const std::int64_t begin = D * p / parts, end = D * (p + 1) / parts;
        double s = 0.0;
        for (std::int64_t i = begin; i < end; ++i) s += x[i];
        partial[static_cast<std::size_t>(p)] = s;
      });
      double s = 0.0;
      for (double v : partial) s += v;
      store(out, s * scale);
      return;
    }
    parallel_for(outer, std::max<std::int64_t>(1, reduce_grain / std::max<std::int64_t>(D, 1)),
                 [&](std::int64_t begin, std::int64_t end) {
                   for (std::int64_t o = begin; o < end; ++o) {
                     double s = 0.0;
                     const float* row = x + o * D;
                     for (std::int64_t d = 0; d < D; ++d) s += row[d];
                     store(out + o, s * scale);
                   }
                 });
    return;
  }
  // Rows of `inner` contiguous values are added together: vectorised across inner, in float.
  parallel_for(outer * inner, reduce_grain / std::max<std::int64_t>(D, 1), [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> acc;
    for (std::int64_t start = begin; start < end;) {
      const std::int64_t o = start / inner, i0 = start % inner;
      const std::int64_t i1 = std::min(inner, i0 + (end - start));
      acc.assign(static_cast<std::size_t>(i1 - i0), 0.0f);
      for (std::int64_t d = 0; d < D; ++d) {
        const float* row = x + (o * D + d) * inner;
        for (std::int64_t i = i0; i < i1; ++i) acc[static_cast<std::size_t>(i - i0)] += row[i];
      }
      float* dst = out + o * inner;
      for (std::int64_t i = i0; i < i1; ++i) {
        const float v = acc[static_cast<std::size_t>(i - i0)] * scale;
        dst[i] = accumulate ? dst[i] + v : v;
      }
      start += i1 - i0;
    }
  });
}

void expand_dim(const float* g, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, float* out,
                bool accumulate) {
  if (inner == 1) {
    // The gradient of a full or last-dimension sum: runs of D copies of one value.
    parallel_for(outer * D, reduce_grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end;) {
        const std::int64_t o = r / D, stop = std::min(end, (o + 1) * D);
        const float v = scale * g[o];
        if (accumulate)
          for (; r < stop; ++r) out[r] += v;
        else
          std::fill(out + r, out + stop, v), r = stop;
      }
    });
    return;
  }
  parallel_for(outer * D, std::max<std::int64_t>(1, reduce_grain / std::max<std::int64_t>(inner, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t r = begin; r < end; ++r) {
                   const float* src = g + (r / D) * inner;
                   float* dst = out + r * inner;
                   if (accumulate)
                     for (std::int64_t i = 0; i < inner; ++i) dst[i] += scale * src[i];
                   else
                     for (std::int64_t i = 0; i < inner; ++i) dst[i] = scale * src[i];
                 }
               });
}

void sum_to_shape(const float* dy, const Shape& dy_shape, float* d, const Shape& d_shape, float scale, bool accumulate) {
  const std::int64_t n = dy_shape.numel();
  if (d_shape.numel() == n) {
    for (std::int64_t i = 0; i < n; ++i) d[i] = accumulate ? d[i] + scale * dy[i] : scale * dy[i];
    return;
  }
  // Strides of d aligned to dy's dimensions, 0 where d was broadcast.
  const int rank = dy_shape.rank();
  std::array<std::int64_t, Shape::max_rank> stride{};
  std::int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int id = d_shape.rank() - rank + i;
    const std::int64_t dd = id >= 0 ? d_shape[id] : 1;
    stride[i] = dd == 1 ? 0 : s;
    s *= dd;
  }
  if (!accumulate) std::fill(d, d + d_shape.numel(), 0.0f);
  const std::int64_t inner = rank == 0 ? 1 : dy_shape[rank - 1], rows = inner == 0 ? 0 : n / inner;
  const std::int64_t inner_stride = rank == 0 ? 0 : stride[rank - 1];
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t off = 0, rest = r;
    for (int i = rank - 2; i >= 0; --i) {
      off += (rest % dy_shape[i]) * stride[i];
      rest /= dy_shape[i];
    }
    const float* g = dy + r * inner;
    for (std::int64_t j = 0; j < inner; ++j) d[off + j * inner_stride] += scale * g[j];
  }
}

double sum_of_squares(const float* x, std::int64_t n) {
  const int parts = std::max(1, static_cast<int>(std::min<std::int64_t>(num_threads(), n / reduce_grain)));
  std::vector<double> partial(static_cast<std::size_t>(parts), 0.0);
  parallel_tasks(parts, [&](int p) {
    const std::int64_t begin = n * p / parts, end = n * (p + 1) / parts;
    double s = 0.0;
    for (std::int64_t i = begin; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
    partial[static_cast<std::size_t>(p)] = s;
  });
  double s = 0.0;
  for (double v : partial) s += v;
  return s;
}

void argmax_rows(const float* x, std::int64_t rows, std::int64_t C, std::int32_t* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * C;
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < C; ++j)
      if (row[j] > row[best]) best = j;
    out[r] = static_cast<std::int32_t>(best);
  }
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
