#include "elementwise.hpp"

#include <cstring>
#include <vector>

#include "common/broadcast_index.hpp"
#include "cpu/elementwise.hpp"
#include "../framework/runtime/device_runtime.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/elementwise.hpp"
#include "cuda/reduce.hpp"
#include "dispatch.hpp"
#include "reduce.hpp"

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
  return dispatch(
      Op::unary, x.device(), x.dtype(),
      [&] {
        return cpu::unary_forward(op, params, x.dtype(), x.data_ptr(), y.data_ptr(), x.numel());
      },
      [&](int index) {
        return ACCRUE_CUDA(unary_forward)(index, op, params, x.dtype(), x.data_ptr(), y.data_ptr(), x.numel());
      });
}

void unary_in_place(UnaryOp op, UnaryParams params, std::span<const Tensor> tensors) {
  if (tensors.empty()) return;
  const Device device = tensors.front().device();
  for (const Tensor& t : tensors) expect_tensors("unary_in_place", device, DType::f32, {&t});
  return dispatch(
      Op::unary_in_place, device, DType::f32,
      [&] {
        for (const Tensor& t : tensors) unary_forward(op, params, t, t);
      },
      [&](int index) {
        std::vector<float*> pointers;
        std::vector<std::int64_t> sizes;
        for (const Tensor& t : tensors) {
          t.bump_version();
          pointers.push_back(ptr<float>(t));
          sizes.push_back(t.numel());
        }
        ACCRUE_CUDA(unary_in_place)(index, op, params, pointers, sizes);
      });
}

void unary_backward(UnaryOp op, UnaryParams params, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                    bool accumulate) {
  ACCRUE_ASSERT(is_floating(dx.dtype()));
  expect_tensors("unary_backward", dx.device(), dx.dtype(), {&x, &y, &dy, &dx});
  ACCRUE_ASSERT(x.numel() == dx.numel() && y.numel() == dx.numel() && dy.numel() == dx.numel());
  dx.bump_version();
  return dispatch(
      Op::unary, dx.device(), dx.dtype(),
      [&] {
        return cpu::unary_backward(op, params, dx.dtype(), x.data_ptr(), y.data_ptr(), dy.data_ptr(), dx.data_ptr(),
                                   dx.numel(), accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(unary_backward)(index, op, params, dx.dtype(), x.data_ptr(), y.data_ptr(), dy.data_ptr(),
                                    dx.data_ptr(), dx.numel(), accumulate);
      });
}

void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  expect_tensors("binary_forward", out.device(), DType::f32, {&a, &b, &out});
  ACCRUE_ASSERT(broadcast_shapes(a.shape(), b.shape(), "binary_forward") == out.shape());
  out.bump_version();
  return dispatch(
      Op::binary, out.device(), out.dtype(),
      [&] {
        return cpu::binary_forward(op, a.data<float>(), a.shape(), b.data<float>(), b.shape(), out.data<float>(),
                                   out.shape());
      },
      [&](int index) {
        return ACCRUE_CUDA(binary_forward)(index, op, ptr<float>(a), ptr<float>(b), ptr<float>(out), out.numel(),
                                    common::broadcast_index(a.shape(), b.shape(), out.shape()));
      });
}

void binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dy, int which, const Tensor& d,
                     bool accumulate) {
  expect_tensors("binary_backward", d.device(), DType::f32, {&a, &b, &dy, &d});
  ACCRUE_ASSERT(d.shape() == (which == 0 ? a.shape() : b.shape()));
  d.bump_version();
  return dispatch(
      Op::binary, d.device(), d.dtype(),
      [&] {
        return cpu::binary_backward(op, a.data<float>(), a.shape(), b.data<float>(), b.shape(), dy.data<float>(),
                                    dy.shape(), which, d.data<float>(), accumulate);
      },
      [&](int device) {
        const common::BroadcastIndex index = common::broadcast_index(a.shape(), b.shape(), dy.shape());
        if (d.shape() == dy.shape())
          return ACCRUE_CUDA(binary_backward)(device, op, ptr<float>(a), ptr<float>(b), ptr<float>(dy), which, ptr<float>(d),
                                       dy.numel(), index, accumulate);
        // A broadcast operand: the gradient at every output element, then summed down to its shape.
        const Tensor full = Tensor::empty(dy.shape(), {.device = d.device()});
        ACCRUE_CUDA(binary_backward)(device, op, ptr<float>(a), ptr<float>(b), ptr<float>(dy), which, ptr<float>(full), dy.numel(),
                              index, false);
        return ACCRUE_CUDA(sum_to_shape)(device, ptr<float>(full), ptr<float>(d), d.numel(),
                                  sum_to_shape_index(dy.shape(), d.shape()), 1.0f, accumulate);
      });
}

void fill(const Tensor& t, float value) {
  expect_tensors("fill", t.device(), DType::f32, {&t});
  t.bump_version();
  return dispatch(
      Op::fill, t.device(), t.dtype(),
      [&] {
        return cpu::fill(t.data<float>(), t.numel(), value);
      },
      [&](int index) {
        return ACCRUE_CUDA(fill)(index, DType::f32, t.data_ptr(), t.numel(), value);
      });
}

void copy(const Tensor& src, const Tensor& dst) {
  expect_tensors("copy", dst.device(), src.dtype(), {&src, &dst});
  ACCRUE_ASSERT(src.numel() == dst.numel());
  dst.bump_version();
  return dispatch(
      Op::copy, dst.device(), dst.dtype(),
      [&] {
        if (src.data_ptr() != dst.data_ptr()) std::memcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes());
      },
      [&](int) {
        if (src.data_ptr() != dst.data_ptr())
          runtime::copy(dst.device(), dst.data_ptr(), src.device(), src.data_ptr(), dst.nbytes());
      });
}

void transfer(const Tensor& src, const Tensor& dst) {
  ACCRUE_ASSERT(src.dtype() == dst.dtype() && src.numel() == dst.numel());
  if (src.device() == dst.device()) return copy(src, dst);
  dst.bump_version();
  runtime::copy(dst.device(), dst.data_ptr(), src.device(), src.data_ptr(), dst.nbytes());
}

void add_into(const Tensor& dst, const Tensor& src, float alpha) {
  ACCRUE_ASSERT(is_floating(dst.dtype()));
  expect_tensors("add_into", dst.device(), dst.dtype(), {&dst, &src});
  ACCRUE_ASSERT(src.numel() == dst.numel());
  dst.bump_version();
  return dispatch(
      Op::add_into, dst.device(), dst.dtype(),
      [&] {
        return cpu::add_into(dst.dtype(), dst.data_ptr(), src.data_ptr(), dst.numel(), alpha);
      },
      [&](int index) {
        return ACCRUE_CUDA(add_into)(index, dst.dtype(), dst.data_ptr(), src.data_ptr(), dst.numel(), alpha);
      });
}

void fill_uniform(const Tensor& t, float low, float high, std::uint64_t seed, std::uint64_t offset) {
  expect_tensors("fill_uniform", t.device(), DType::f32, {&t});
  t.bump_version();
  return dispatch(
      Op::random_fill, t.device(), t.dtype(),
      [&] {
        return cpu::fill_uniform(t.data<float>(), t.numel(), low, high, seed, offset);
      },
      [&](int index) {
        return ACCRUE_CUDA(fill_uniform)(index, ptr<float>(t), t.numel(), low, high, seed, offset);
      });
}

void fill_normal(const Tensor& t, float mean, float stddev, std::uint64_t seed, std::uint64_t offset) {
  expect_tensors("fill_normal", t.device(), DType::f32, {&t});
  t.bump_version();
  return dispatch(
      Op::random_fill, t.device(), t.dtype(),
      [&] {
        return cpu::fill_normal(t.data<float>(), t.numel(), mean, stddev, seed, offset);
      },
      [&](int index) {
        return ACCRUE_CUDA(fill_normal)(index, ptr<float>(t), t.numel(), mean, stddev, seed, offset);
      });
}

}  // namespace accrue::kernels
