#include "accrue/kernels/elementwise.hpp"

#include <cstring>
#include <vector>

#include "accrue/kernels/dispatch.hpp"
#include "accrue/kernels/reduce.hpp"

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

static_assert(Shape::max_rank == common::broadcast_max_rank);

common::BroadcastIndex broadcast_index(const Shape& a, const Shape& b, const Shape& o) {
  common::BroadcastIndex index;
  index.rank = o.rank();
  std::int64_t sa = 1, sb = 1;
  for (int i = o.rank() - 1; i >= 0; --i) {
    index.out[i] = o[i];
    const int ia = a.rank() - o.rank() + i, ib = b.rank() - o.rank() + i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    index.stride_a[i] = da == 1 ? 0 : sa;
    index.stride_b[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  return index;
}

void unary_forward(UnaryOp op, UnaryParams params, const Tensor& x, const Tensor& y) {
  ACCRUE_ASSERT(is_floating(x.dtype()));
  expect_tensors("unary_forward", x.device(), x.dtype(), {&x, &y});
  ACCRUE_ASSERT(x.numel() == y.numel());
  y.bump_version();
  if (x.device().is_cpu()) return cpu::unary_forward(op, params, x.dtype(), x.data_ptr(), y.data_ptr(), x.numel());
#if ACCRUE_WITH_CUDA
  if (x.device().is_cuda())
    return cuda::unary_forward(x.device().index(), op, params, x.dtype(), x.data_ptr(), y.data_ptr(), x.numel());
#endif
  unsupported_device("unary_forward", x.device());
}

void unary_in_place(UnaryOp op, UnaryParams params, std::span<const Tensor> tensors) {
  if (tensors.empty()) return;
  const Device device = tensors.front().device();
  for (const Tensor& t : tensors) expect_tensors("unary_in_place", device, DType::f32, {&t});
#if ACCRUE_WITH_CUDA
  if (device.is_cuda()) {
    std::vector<float*> pointers;
    std::vector<std::int64_t> sizes;
    for (const Tensor& t : tensors) {
      t.bump_version();
      pointers.push_back(ptr<float>(t));
      sizes.push_back(t.numel());
    }
    return cuda::unary_in_place(device.index(), op, params, pointers, sizes);
  }
#endif
  for (const Tensor& t : tensors) unary_forward(op, params, t, t);
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
#if ACCRUE_WITH_CUDA
  if (dx.device().is_cuda())
    return cuda::unary_backward(dx.device().index(), op, params, dx.dtype(), x.data_ptr(), y.data_ptr(), dy.data_ptr(),
                                dx.data_ptr(), dx.numel(), accumulate);
#endif
  unsupported_device("unary_backward", dx.device());
}

void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  expect_tensors("binary_forward", out.device(), DType::f32, {&a, &b, &out});
  ACCRUE_ASSERT(broadcast_shapes(a.shape(), b.shape(), "binary_forward") == out.shape());
  out.bump_version();
  if (out.device().is_cpu())
    return cpu::binary_forward(op, a.data<float>(), a.shape(), b.data<float>(), b.shape(), out.data<float>(),
                               out.shape());
#if ACCRUE_WITH_CUDA
  if (out.device().is_cuda())
    return cuda::binary_forward(out.device().index(), op, ptr<float>(a), ptr<float>(b), ptr<float>(out), out.numel(),
                                broadcast_index(a.shape(), b.shape(), out.shape()));
#endif
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
#if ACCRUE_WITH_CUDA
  if (d.device().is_cuda()) {
    const int device = d.device().index();
    const common::BroadcastIndex index = broadcast_index(a.shape(), b.shape(), dy.shape());
    if (d.shape() == dy.shape())
      return cuda::binary_backward(device, op, ptr<float>(a), ptr<float>(b), ptr<float>(dy), which, ptr<float>(d),
                                   dy.numel(), index, accumulate);
    // A broadcast operand: the gradient at every output element, then summed down to its shape.
    const Tensor full = Tensor::empty(dy.shape(), {.device = d.device()});
    cuda::binary_backward(device, op, ptr<float>(a), ptr<float>(b), ptr<float>(dy), which, ptr<float>(full), dy.numel(),
                          index, false);
    return cuda::sum_to_shape(device, ptr<float>(full), ptr<float>(d), d.numel(),
                              sum_to_shape_index(dy.shape(), d.shape()), 1.0f, accumulate);
  }
#endif
  unsupported_device("binary_backward", d.device());
}

void fill(const Tensor& t, float value) {
  expect_tensors("fill", t.device(), DType::f32, {&t});
  t.bump_version();
  if (t.device().is_cpu()) return cpu::fill(t.data<float>(), t.numel(), value);
#if ACCRUE_WITH_CUDA
  if (t.device().is_cuda()) return cuda::fill(t.device().index(), DType::f32, t.data_ptr(), t.numel(), value);
#endif
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
#if ACCRUE_WITH_CUDA
  if (dst.device().is_cuda()) {
    if (src.data_ptr() != dst.data_ptr())
      cuda::copy_device_to_device(dst.device().index(), dst.data_ptr(), src.device().index(), src.data_ptr(), dst.nbytes());
    return;
  }
#endif
  unsupported_device("copy", dst.device());
}

void transfer(const Tensor& src, const Tensor& dst) {
  ACCRUE_ASSERT(src.dtype() == dst.dtype() && src.numel() == dst.numel());
  if (src.device() == dst.device()) return copy(src, dst);
  dst.bump_version();
#if ACCRUE_WITH_CUDA
  const std::size_t bytes = dst.nbytes();
  if (src.device().is_cpu() && dst.device().is_cuda())
    return cuda::copy_host_to_device(dst.device().index(), dst.data_ptr(), src.data_ptr(), bytes);
  if (src.device().is_cuda() && dst.device().is_cpu())
    return cuda::copy_device_to_host(src.device().index(), dst.data_ptr(), src.data_ptr(), bytes);
  if (src.device().is_cuda() && dst.device().is_cuda())
    return cuda::copy_device_to_device(dst.device().index(), dst.data_ptr(), src.device().index(), src.data_ptr(), bytes);
#endif
  unsupported_device("transfer", src.device().is_cpu() ? dst.device() : src.device());
}

void add_into(const Tensor& dst, const Tensor& src, float alpha) {
  ACCRUE_ASSERT(is_floating(dst.dtype()));
  expect_tensors("add_into", dst.device(), dst.dtype(), {&dst, &src});
  ACCRUE_ASSERT(src.numel() == dst.numel());
  dst.bump_version();
  if (dst.device().is_cpu()) return cpu::add_into(dst.dtype(), dst.data_ptr(), src.data_ptr(), dst.numel(), alpha);
#if ACCRUE_WITH_CUDA
  if (dst.device().is_cuda())
    return cuda::add_into(dst.device().index(), dst.dtype(), dst.data_ptr(), src.data_ptr(), dst.numel(), alpha);
#endif
  unsupported_device("add_into", dst.device());
}

void fill_uniform(const Tensor& t, float low, float high, std::uint64_t seed, std::uint64_t offset) {
  expect_tensors("fill_uniform", t.device(), DType::f32, {&t});
  t.bump_version();
  if (t.device().is_cpu()) return cpu::fill_uniform(t.data<float>(), t.numel(), low, high, seed, offset);
#if ACCRUE_WITH_CUDA
  if (t.device().is_cuda()) return cuda::fill_uniform(t.device().index(), ptr<float>(t), t.numel(), low, high, seed, offset);
#endif
  unsupported_device("fill_uniform", t.device());
}

void fill_normal(const Tensor& t, float mean, float stddev, std::uint64_t seed, std::uint64_t offset) {
  expect_tensors("fill_normal", t.device(), DType::f32, {&t});
  t.bump_version();
  if (t.device().is_cpu()) return cpu::fill_normal(t.data<float>(), t.numel(), mean, stddev, seed, offset);
#if ACCRUE_WITH_CUDA
  if (t.device().is_cuda())
    return cuda::fill_normal(t.device().index(), ptr<float>(t), t.numel(), mean, stddev, seed, offset);
#endif
  unsupported_device("fill_normal", t.device());
}

}  // namespace accrue::kernels
