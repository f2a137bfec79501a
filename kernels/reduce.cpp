#include "accrue/kernels/reduce.hpp"

#include <vector>

#include "accrue/kernels/cast.hpp"
#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

void sum_dim(const Tensor& x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, const Tensor& out,
             bool accumulate) {
  expect_tensors("sum_dim", out.device(), DType::f32, {&out});
  ACCRUE_ASSERT(is_floating(x.dtype()) && x.device() == out.device());
  ACCRUE_ASSERT(x.numel() == outer * D * inner && out.numel() == outer * inner);
  out.bump_version();
  if (out.device().is_cpu()) {
    if (x.dtype() == DType::f32) return cpu::sum_dim(x.data<float>(), outer, D, inner, scale, out.data<float>(), accumulate);
    // Low precision: sum the float32 values (a copy the size of x; reductions of bias gradients only).
    std::vector<float> values(static_cast<std::size_t>(x.numel()));
    cpu::cast(x.data_ptr(), x.dtype(), values.data(), DType::f32, x.numel());
    return cpu::sum_dim(values.data(), outer, D, inner, scale, out.data<float>(), accumulate);
  }
  unsupported_device("sum_dim", out.device());
}

void expand_dim(const Tensor& g, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale, const Tensor& out,
                bool accumulate) {
  expect_tensors("expand_dim", out.device(), DType::f32, {&g, &out});
  ACCRUE_ASSERT(g.numel() == outer * inner && out.numel() == outer * D * inner);
  out.bump_version();
  if (out.device().is_cpu())
    return cpu::expand_dim(g.data<float>(), outer, D, inner, scale, out.data<float>(), accumulate);
  unsupported_device("expand_dim", out.device());
}

void sum_to_shape(const Tensor& dy, const Tensor& d, float scale, bool accumulate) {
  expect_tensors("sum_to_shape", d.device(), DType::f32, {&dy, &d});
  d.bump_version();
  if (d.device().is_cpu())
    return cpu::sum_to_shape(dy.data<float>(), dy.shape(), d.data<float>(), d.shape(), scale, accumulate);
  unsupported_device("sum_to_shape", d.device());
}

double sum_of_squares(const Tensor& x) {
  expect_tensors("sum_of_squares", x.device(), DType::f32, {&x});
  if (x.device().is_cpu()) return cpu::sum_of_squares(x.data<float>(), x.numel());
  unsupported_device("sum_of_squares", x.device());
}

void argmax_rows(const Tensor& x, const Tensor& out) {
  expect_tensors("argmax_rows", out.device(), DType::f32, {&x});
  expect_tensors("argmax_rows", out.device(), DType::i32, {&out});
  ACCRUE_ASSERT(x.rank() == 2 && out.numel() == x.size(0));
  out.bump_version();
  if (out.device().is_cpu()) return cpu::argmax_rows(x.data<float>(), x.size(0), x.size(1), out.data<std::int32_t>());
  unsupported_device("argmax_rows", out.device());
}

}  // namespace accrue::kernels
