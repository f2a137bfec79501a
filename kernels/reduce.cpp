#include "reduce.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "cast.hpp"
#include "cpu/cast.hpp"
#include "cpu/reduce.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/reduce.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

common::SumToShapeIndex sum_to_shape_index(const Shape& dy, const Shape& d) {
  common::SumToShapeIndex index;
  std::int64_t stride = 1;
  // Walk dy's dimensions innermost first, then reverse each list so it is outermost first.
  for (int i = dy.rank() - 1; i >= 0; --i) {
    const int id = d.rank() - dy.rank() + i;
    const std::int64_t extent_d = id >= 0 ? d[id] : 1;
    if (extent_d == dy[i]) {
      if (dy[i] != 1) {
        index.kept_extent[index.kept_rank] = dy[i];
        index.kept_stride[index.kept_rank++] = stride;
      }
    } else {
      ACCRUE_ASSERT(extent_d == 1);
      index.reduced_extent[index.reduced_rank] = dy[i];
      index.reduced_stride[index.reduced_rank++] = stride;
      index.reduced_count *= dy[i];
    }
    stride *= dy[i];
  }
  std::reverse(index.kept_extent, index.kept_extent + index.kept_rank);
  std::reverse(index.kept_stride, index.kept_stride + index.kept_rank);
  std::reverse(index.reduced_extent, index.reduced_extent + index.reduced_rank);
  std::reverse(index.reduced_stride, index.reduced_stride + index.reduced_rank);
  return index;
}

void sum_dim(const Tensor& x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, const Tensor& out,
             bool accumulate) {
  expect_tensors("sum_dim", out.device(), DType::f32, {&out});
  ACCRUE_ASSERT(is_floating(x.dtype()) && x.device() == out.device());
  ACCRUE_ASSERT(x.numel() == outer * D * inner && out.numel() == outer * inner);
  out.bump_version();
  return dispatch(
      Op::sum_dim, out.device(), x.dtype(),
      [&] {
        if (x.dtype() == DType::f32) return cpu::sum_dim(x.data<float>(), outer, D, inner, scale, out.data<float>(), accumulate);
        // Low precision: sum the float32 values (a copy the size of x; reductions of bias gradients only).
        std::vector<float> values(static_cast<std::size_t>(x.numel()));
        cpu::cast(x.data_ptr(), x.dtype(), values.data(), DType::f32, x.numel());
        return cpu::sum_dim(values.data(), outer, D, inner, scale, out.data<float>(), accumulate);
      },
      [&](int index) {
        const std::int64_t partials = ACCRUE_CUDA(sum_dim_partials)(outer, D, inner);
        std::optional<Storage> scratch;
        if (partials > 0)
          scratch.emplace(sizeof(double) * static_cast<std::size_t>(partials), out.device(), MemoryCategory::temporaries);
        return ACCRUE_CUDA(sum_dim)(index, x.dtype(), x.data_ptr(), outer, D, inner, scale, ptr<float>(out), accumulate,
                             scratch ? static_cast<double*>(scratch->data()) : nullptr);
      });
}

void expand_dim(const Tensor& g, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, const Tensor& out,
                bool accumulate) {
  expect_tensors("expand_dim", out.device(), DType::f32, {&g, &out});
  ACCRUE_ASSERT(g.numel() == outer * inner && out.numel() == outer * D * inner);
  out.bump_version();
  return dispatch(
      Op::expand_dim, out.device(), out.dtype(),
      [&] {
        return cpu::expand_dim(g.data<float>(), outer, D, inner, scale, out.data<float>(), accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(expand_dim)(index, ptr<float>(g), outer, D, inner, scale, ptr<float>(out), accumulate);
      });
}

void sum_to_shape(const Tensor& dy, const Tensor& d, float scale, bool accumulate) {
  expect_tensors("sum_to_shape", d.device(), DType::f32, {&dy, &d});
  d.bump_version();
  return dispatch(
      Op::sum_to_shape, d.device(), d.dtype(),
      [&] {
        return cpu::sum_to_shape(dy.data<float>(), dy.shape(), d.data<float>(), d.shape(), scale, accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(sum_to_shape)(index, ptr<float>(dy), ptr<float>(d), d.numel(),
                                  sum_to_shape_index(dy.shape(), d.shape()), scale, accumulate);
      });
}

double sum_of_squares(const Tensor& x) { return sum_of_squares(std::span<const Tensor>(&x, 1)); }

double sum_of_squares(std::span<const Tensor> tensors) {
  if (tensors.empty()) return 0.0;
  const Device device = tensors.front().device();
  for (const Tensor& t : tensors) expect_tensors("sum_of_squares", device, DType::f32, {&t});
  return dispatch(
      Op::sum_of_squares, device, DType::f32,
      [&] {
        double total = 0.0;
        for (const Tensor& t : tensors) total += cpu::sum_of_squares(t.data<float>(), t.numel());
        return total;
      },
      [&](int index) {
        std::vector<const float*> pointers;
        std::vector<std::int64_t> sizes;
        for (const Tensor& t : tensors) {
          pointers.push_back(ptr<float>(t));
          sizes.push_back(t.numel());
        }
        const Storage scratch{sizeof(double) * static_cast<std::size_t>(ACCRUE_CUDA(sum_of_squares_partials)(sizes)), device,
                              MemoryCategory::temporaries};
        return ACCRUE_CUDA(sum_of_squares)(index, pointers, sizes, static_cast<double*>(scratch.data()));
      });
}

void argmax_rows(const Tensor& x, const Tensor& out) {
  expect_tensors("argmax_rows", out.device(), DType::f32, {&x});
  expect_tensors("argmax_rows", out.device(), DType::i32, {&out});
  ACCRUE_ASSERT(x.rank() == 2 && out.numel() == x.size(0));
  out.bump_version();
  return dispatch(
      Op::argmax_rows, out.device(), x.dtype(),
      [&] {
        return cpu::argmax_rows(x.data<float>(), x.size(0), x.size(1), out.data<std::int32_t>());
      },
      [&](int index) {
        return ACCRUE_CUDA(argmax_rows)(index, ptr<float>(x), x.size(0), x.size(1), ptr<std::int32_t>(out));
      });
}

}  // namespace accrue::kernels
