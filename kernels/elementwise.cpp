#include "accrue/kernels/elementwise.hpp"

#include <cstring>

#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError(fmt::format("{}: shapes {} and {} do not broadcast (dimension {} is {} against {})", op, a, b, i,
                                   da, db));
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

void unary_forward(UnaryOp op, UnaryParams params, const Tensor& x, const Tensor& y) {
  ACCRUE_ASSERT(is_floating(x.dtype()));
  expect_tensors("unary_forward", x.device(), x.dtype(), {&x, &y});
  ACCRUE_ASSERT(x.numel() == y.numel());
  y.bump_version();
  if (x.device().is_cpu()) return cpu::unary_forward(op, params, x.dtype(), x.data_ptr(), y.data_ptr(), x.numel());
  unsupported_device("unary_forward", x.device());
}

void unary_backward(UnaryOp op, UnaryParams params, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                    bool accumulate) {
  ACCRUE_ASSERT(is_floating(dx.dtype()));
  expect_tensors("unary_backward", dx.device(), dx.dtype(), {&x, &y, &dy, &dx});
  ACCRUE_ASSERT(x.numel() == dx.numel() && y.numel() == dx.numel() && dy.numel() == dx.numel());
  dx.bump_version();
  if (dx.device().is_cpu())
    return cpu::unary_backward(op, params, dx.dtype(), x.data_ptr(), y.data_ptr(), dy.data_ptr(), dx.data_ptr(),
                               dx.numel(), accumulate);
  unsupported_device("unary_backward", dx.device());
}

void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  expect_tensors("binary_forward", out.device(), DType::f32, {&a, &b, &out});
  ACCRUE_ASSERT(broadcast_shapes(a.shape(), b.shape(), "binary_forward") == out.shape());
  out.bump_version();
  if (out.device().is_cpu())
    return cpu::binary_forward(op, a.data<float>(), a.shape(), b.data<float>(), b.shape(), out.data<float>(),
                               out.shape());
  unsupported_device("binary_forward", out.device());
}

void binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dy, int which, const Tensor& d,
                     bool accumulate) {
  expect_tensors("binary_backward", d.device(), DType::f32, {&a, &b, &dy, &d});
  ACCRUE_ASSERT(d.shape() == (which == 0 ? a.shape() : b.shape()));
  d.bump_version();
  if (d.device().is_cpu())
    return cpu::binary_backward(op, a.data<float>(), a.shape(), b.data<float>(), b.shape(), dy.data<float>(),
                                dy.shape(), which, d.data<float>(), accumulate);
  unsupported_device("binary_backward", d.device());
}

void fill(const Tensor& t, float value) {
  expect_tensors("fill", t.device(), DType::f32, {&t});
  t.bump_version();
  if (t.device().is_cpu()) return cpu::fill(t.data<float>(), t.numel(), value);
  unsupported_device("fill", t.device());
}

void copy(const Tensor& src, const Tensor& dst) {
  expect_tensors("copy", dst.device(), src.dtype(), {&src, &dst});
  ACCRUE_ASSERT(src.numel() == dst.numel());
  dst.bump_version();
  if (dst.device().is_cpu()) {
    if (src.data_ptr() != dst.data_ptr()) std::memcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return;
  }
  unsupported_device("copy", dst.device());
}

void add_into(const Tensor& dst, const Tensor& src, float alpha) {
  ACCRUE_ASSERT(is_floating(dst.dtype()));
  expect_tensors("add_into", dst.device(), dst.dtype(), {&dst, &src});
  ACCRUE_ASSERT(src.numel() == dst.numel());
  dst.bump_version();
  if (dst.device().is_cpu()) return cpu::add_into(dst.dtype(), dst.data_ptr(), src.data_ptr(), dst.numel(), alpha);
  unsupported_device("add_into", dst.device());
}

void fill_uniform(const Tensor& t, float low, float high, std::uint64_t seed, std::uint64_t offset) {
  expect_tensors("fill_uniform", t.device(), DType::f32, {&t});
  t.bump_version();
  if (t.device().is_cpu()) return cpu::fill_uniform(t.data<float>(), t.numel(), low, high, seed, offset);
  unsupported_device("fill_uniform", t.device());
}

void fill_normal(const Tensor& t, float mean, float stddev, std::uint64_t seed, std::uint64_t offset) {
  expect_tensors("fill_normal", t.device(), DType::f32, {&t});
  t.bump_version();
  if (t.device().is_cpu()) return cpu::fill_normal(t.data<float>(), t.numel(), mean, stddev, seed, offset);
  unsupported_device("fill_normal", t.device());
}

}  // namespace accrue::kernels
