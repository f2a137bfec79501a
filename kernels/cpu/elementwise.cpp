// Element-wise kernels on the CPU: the shared math of kernels/common in loops the compiler
// vectorises, split across the pool when the tensor is large enough to pay for it.

#include <algorithm>
#include <array>

#include "../common/binary.hpp"
#include "../common/broadcast_index.hpp"
#include "../../framework/core/half.hpp"
#include "../../framework/core/philox.hpp"
#include "parallel.hpp"
#include "elementwise.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {
namespace {

// Elements per thread below which splitting costs more than it saves (a few microseconds of
// work). At 1 << 15 the 64 x 512 activations of the tutorial MLP ran on one thread; splitting them
// made its batch-64 epoch about 1.5% faster (bench/mlp_epoch, alternated in one process).
constexpr std::int64_t elementwise_grain = 1 << 14;

// T is the storage type (float, bfloat16, float16); the arithmetic is float32. A low-precision
// tensor goes through float32 a chunk at a time, in separate loops that widen, compute and narrow:
// each of them vectorises, where one loop doing all three stayed scalar (GELU's backward in
// bfloat16 took 10% of a GPT's training step that way).
constexpr std::int64_t chunk = 256;

template <class T>
void widen(const T* in, float* out, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) out[k] = common::load(in[k]);
}

template <UnaryOp Op, class T>
void unary_forward_impl(UnaryParams p, const T* x, T* y, std::int64_t n) {
  parallel_for(n, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
    const UnaryParams q = p;
    if constexpr (std::is_same_v<T, float>) {
      for (std::int64_t i = begin; i < end; ++i) y[i] = common::unary_apply<Op>(x[i], q);
    } else {
      float v[chunk];
      for (std::int64_t c = begin; c < end; c += chunk) {
        const std::int64_t m = std::min(chunk, end - c);
        widen(x + c, v, m);
        for (std::int64_t k = 0; k < m; ++k) v[k] = common::unary_apply<Op>(v[k], q);
        for (std::int64_t k = 0; k < m; ++k) y[c + k] = common::store<T>(v[k]);
      }
    }
  });
}

template <UnaryOp Op, class T>
void unary_backward_impl(UnaryParams p, const T* x, const T* y, const T* dy, T* dx, std::int64_t n, bool accumulate) {
  parallel_for(n, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
    const UnaryParams q = p;
    if constexpr (std::is_same_v<T, float>) {
      if (accumulate)
        for (std::int64_t i = begin; i < end; ++i) dx[i] += common::unary_grad<Op>(x[i], y[i], dy[i], q);
      else
        for (std::int64_t i = begin; i < end; ++i) dx[i] = common::unary_grad<Op>(x[i], y[i], dy[i], q);
    } else {
      // The op reads x or y, never both: the one it does not read is a copy of dy.
      float v[chunk], g[chunk];
      const float* xv = unary_grad_reads_input(Op) ? v : g;
      const float* yv = unary_grad_reads_output(Op) ? v : g;
      for (std::int64_t c = begin; c < end; c += chunk) {
        const std::int64_t m = std::min(chunk, end - c);
        if constexpr (unary_grad_reads_input(Op)) widen(x + c, v, m);
        if constexpr (unary_grad_reads_output(Op)) widen(y + c, v, m);
        widen(dy + c, g, m);
        for (std::int64_t k = 0; k < m; ++k) g[k] = common::unary_grad<Op>(xv[k], yv[k], g[k], q);
        if (accumulate)
          for (std::int64_t k = 0; k < m; ++k) dx[c + k] = common::store<T>(common::load(dx[c + k]) + g[k]);
        else
          for (std::int64_t k = 0; k < m; ++k) dx[c + k] = common::store<T>(g[k]);
      }
    }
  });
}

// Calls f with a null pointer of the storage type of `dtype`.
template <class F>
void with_float_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(static_cast<float*>(nullptr));
    case DType::bf16: return f(static_cast<bfloat16*>(nullptr));
    case DType::f16: return f(static_cast<float16*>(nullptr));
    case DType::i32: break;
  }
}


// Broadcast ops run row by row: a row is the last dimension of the output, along which each
// operand advances by its innermost stride (0 when broadcast).
struct Broadcast {
  common::BroadcastIndex index;
  Broadcast(const Shape& a, const Shape& b, const Shape& o) : index(common::broadcast_index(a, b, o)) {}
  std::int64_t inner() const { return index.rank == 0 ? 1 : index.out[index.rank - 1]; }
  std::int64_t inner_a() const { return index.rank == 0 ? 0 : index.stride_a[index.rank - 1]; }
  std::int64_t inner_b() const { return index.rank == 0 ? 0 : index.stride_b[index.rank - 1]; }
  void row_offsets(std::int64_t row, std::int64_t* oa, std::int64_t* ob) const { index.offsets(row * inner(), oa, ob); }
};

template <BinaryOp Op>
void binary_forward_impl(const float* a, const Shape& as, const float* b, const Shape& bs, float* out, const Shape& os) {
  const std::int64_t n = os.numel();
  if (as == os && bs == os) {
    parallel_for(n, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) out[i] = common::binary_apply<Op>(a[i], b[i]);
    });
    return;
  }
  const Broadcast bc{as, bs, os};
  const std::int64_t inner = bc.inner(), rows = inner == 0 ? 0 : n / inner;
  const std::int64_t ia = bc.inner_a(), ib = bc.inner_b();
  parallel_for(rows, std::max<std::int64_t>(1, elementwise_grain / std::max<std::int64_t>(inner, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t r = begin; r < end; ++r) {
                   std::int64_t oa, ob;
                   bc.row_offsets(r, &oa, &ob);
                   float* o = out + r * inner;
                   for (std::int64_t j = 0; j < inner; ++j) o[j] = common::binary_apply<Op>(a[oa + j * ia], b[ob + j * ib]);
                 }
               });
}

template <BinaryOp Op>
void binary_backward_impl(const float* a, const Shape& as, const float* b, const Shape& bs, const float* dy,
                          const Shape& os, int which, float* d, bool accumulate) {
  const std::int64_t n = os.numel();
  const Shape& ds = which == 0 ? as : bs;
  auto grad = [which](float x, float y, float g) {
    return which == 0 ? common::binary_grad_a<Op>(x, y, g) : common::binary_grad_b<Op>(x, y, g);
  };
  const Broadcast bc{as, bs, os};
  const std::int64_t inner = bc.inner(), rows = inner == 0 ? 0 : n / inner;
  const std::int64_t ia = bc.inner_a(), ib = bc.inner_b();
  if (ds == os) {
    // No reduction: each output element feeds exactly one element of d.
    parallel_for(rows, std::max<std::int64_t>(1, elementwise_grain / std::max<std::int64_t>(inner, 1)),
                 [&](std::int64_t begin, std::int64_t end) {
                   for (std::int64_t r = begin; r < end; ++r) {
                     std::int64_t oa, ob;
                     bc.row_offsets(r, &oa, &ob);
                     const float* g = dy + r * inner;
                     float* dr = d + r * inner;
                     for (std::int64_t j = 0; j < inner; ++j) {
                       const float v = grad(a[oa + j * ia], b[ob + j * ib], g[j]);
                       dr[j] = accumulate ? dr[j] + v : v;
                     }
                   }
                 });
    return;
  }
  // The operand was broadcast: sum the contributions of every output element it fed.
  if (!accumulate) std::fill(d, d + ds.numel(), 0.0f);
  const std::int64_t id = which == 0 ? ia : ib;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t oa, ob;
    bc.row_offsets(r, &oa, &ob);
    const std::int64_t od = which == 0 ? oa : ob;
    const float* g = dy + r * inner;
    for (std::int64_t j = 0; j < inner; ++j) d[od + j * id] += grad(a[oa + j * ia], b[ob + j * ib], g[j]);
  }
}

}  // namespace

void unary_forward(UnaryOp op, UnaryParams params, DType dtype, const void* x, void* y, std::int64_t n) {
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    with_unary_op(op, [&](auto tag) {
      unary_forward_impl<decltype(tag)::value>(params, static_cast<const T*>(x), static_cast<T*>(y), n);
    });
  });
}

void unary_backward(UnaryOp op, UnaryParams params, DType dtype, const void* x, const void* y, const void* dy, void* dx,
                    std::int64_t n, bool accumulate) {
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    with_unary_op(op, [&](auto tag) {
      unary_backward_impl<decltype(tag)::value>(params, static_cast<const T*>(x), static_cast<const T*>(y),
                                                static_cast<const T*>(dy), static_cast<T*>(dx), n, accumulate);
    });
  });
}

void binary_forward(BinaryOp op, const float* a, const Shape& a_shape, const float* b, const Shape& b_shape, float* out,
                    const Shape& out_shape) {
  with_binary_op(op, [&](auto tag) { binary_forward_impl<decltype(tag)::value>(a, a_shape, b, b_shape, out, out_shape); });
}

void binary_backward(BinaryOp op, const float* a, const Shape& a_shape, const float* b, const Shape& b_shape,
                     const float* dy, const Shape& out_shape, int which, float* d, bool accumulate) {
  with_binary_op(op, [&](auto tag) {
    binary_backward_impl<decltype(tag)::value>(a, a_shape, b, b_shape, dy, out_shape, which, d, accumulate);
  });
}

void fill(float* t, std::int64_t n, float value) {
  parallel_for(n, elementwise_grain * 4, [&](std::int64_t begin, std::int64_t end) { std::fill(t + begin, t + end, value); });
}

void add_into(DType dtype, void* dst, const void* src, std::int64_t n, float alpha) {
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    T* d = static_cast<T*>(dst);
    const T* s = static_cast<const T*>(src);
    parallel_for(n, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) d[i] = common::store<T>(common::load(d[i]) + alpha * common::load(s[i]));
    });
  });
}

void fill_uniform(float* t, std::int64_t n, float low, float high, std::uint64_t seed, std::uint64_t offset) {
  const float range = high - low;
  parallel_for(n, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      t[i] = low + range * common::uniform_from_bits(common::philox_bits(seed, offset, static_cast<std::uint64_t>(i)));
  });
}

void fill_normal(float* t, std::int64_t n, float mean, float stddev, std::uint64_t seed, std::uint64_t offset) {
  parallel_for(n, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      t[i] = mean + stddev * common::normal_at(seed, offset, static_cast<std::uint64_t>(i));
  });
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
