// Element-wise kernels on the GPU: the math of kernels/common (unary.hpp, binary.hpp,
// broadcast.hpp, half.hpp, philox.hpp) in grid-stride loops.

#include "../common/binary.hpp"
#include "../../framework/core/philox.hpp"
#include "../common/unary.hpp"
#include "launch.cuh"
#include "elementwise.hpp"
#include "multi_tensor.cuh"

namespace accrue::kernels::cuda {
namespace {

template <UnaryOp Op, class T>
struct UnaryForward {
  UnaryParams p;
  const T* x;
  T* y;
  __device__ void operator()(std::int64_t i) const { y[i] = common::store<T>(common::unary_apply<Op>(common::load(x[i]), p)); }
};

template <UnaryOp Op, class T>
struct UnaryBackward {
  UnaryParams p;
  const T* x;
  const T* y;
  const T* dy;
  T* dx;
  bool accumulate;
  static constexpr bool reads_x = unary_grad_reads_input(Op);
  static constexpr bool reads_y = unary_grad_reads_output(Op);
  __device__ void operator()(std::int64_t i) const {
    // Only the operand the derivative reads is loaded; the other pointer may be a dummy.
    float xv = 0.0f, yv = 0.0f;
    if constexpr (reads_x) xv = common::load(x[i]);
    if constexpr (reads_y) yv = common::load(y[i]);
    const float g = common::unary_grad<Op>(xv, yv, common::load(dy[i]), p);
    dx[i] = common::store<T>(accumulate ? common::load(dx[i]) + g : g);
  }
};


template <BinaryOp Op>
struct BinaryForward {
  const float* a;
  const float* b;
  float* out;
  common::BroadcastIndex index;
  __device__ void operator()(std::int64_t i) const {
    std::int64_t oa, ob;
    index.offsets(i, &oa, &ob);
    out[i] = common::binary_apply<Op>(a[oa], b[ob]);
  }
};

template <BinaryOp Op>
struct BinaryBackward {
  const float* a;
  const float* b;
  const float* dy;
  float* d;
  int which;
  bool accumulate;
  common::BroadcastIndex index;
  __device__ void operator()(std::int64_t i) const {
    std::int64_t oa, ob;
    index.offsets(i, &oa, &ob);
    const float g = which == 0 ? common::binary_grad_a<Op>(a[oa], b[ob], dy[i]) : common::binary_grad_b<Op>(a[oa], b[ob], dy[i]);
    d[i] = accumulate ? d[i] + g : g;
  }
};

template <class T>
struct Fill {
  T* t;
  T value;
  __device__ void operator()(std::int64_t i) const { t[i] = value; }
};

template <class T>
struct AddInto {
  T* dst;
  const T* src;
  float alpha;
  __device__ void operator()(std::int64_t i) const {
    dst[i] = common::store<T>(common::load(dst[i]) + alpha * common::load(src[i]));
  }
};

struct FillUniform {
  float* t;
  float low, range;
  std::uint64_t seed, offset;
  __device__ void operator()(std::int64_t i) const {
    t[i] = low + range * common::uniform_from_bits(common::philox_bits(seed, offset, static_cast<std::uint64_t>(i)));
  }
};

struct FillNormal {
  float* t;
  float mean, stddev;
  std::uint64_t seed, offset;
  __device__ void operator()(std::int64_t i) const {
    t[i] = mean + stddev * common::normal_at(seed, offset, static_cast<std::uint64_t>(i));
  }
};

}  // namespace

void unary_forward(int device, UnaryOp op, UnaryParams params, DType dtype, const void* x, void* y, std::int64_t n) {
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    with_unary_op(op, [&](auto tag) {
      launch_elementwise(device, n, "unary_forward",
                         UnaryForward<decltype(tag)::value, T>{params, static_cast<const T*>(x), static_cast<T*>(y)});
    });
  });
}

void unary_backward(int device, UnaryOp op, UnaryParams params, DType dtype, const void* x, const void* y,
                    const void* dy, void* dx, std::int64_t n, bool accumulate) {
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    with_unary_op(op, [&](auto tag) {
      launch_elementwise(device, n, "unary_backward",
                         UnaryBackward<decltype(tag)::value, T>{params, static_cast<const T*>(x), static_cast<const T*>(y),
                                                                static_cast<const T*>(dy), static_cast<T*>(dx),
                                                                accumulate});
    });
  });
}

void binary_forward(int device, BinaryOp op, const float* a, const float* b, float* out, std::int64_t n,
                    const common::BroadcastIndex& index) {
  with_binary_op(op, [&](auto tag) {
    launch_elementwise(device, n, "binary_forward", BinaryForward<decltype(tag)::value>{a, b, out, index});
  });
}

void binary_backward(int device, BinaryOp op, const float* a, const float* b, const float* dy, int which, float* d,
                     std::int64_t n, const common::BroadcastIndex& index, bool accumulate) {
  with_binary_op(op, [&](auto tag) {
    launch_elementwise(device, n, "binary_backward",
                       BinaryBackward<decltype(tag)::value>{a, b, dy, d, which, accumulate, index});
  });
}

void fill(int device, DType dtype, void* t, std::int64_t n, float value) {
  if (dtype == DType::i32) {
    launch_elementwise(device, n, "fill", Fill<std::int32_t>{static_cast<std::int32_t*>(t), static_cast<std::int32_t>(value)});
    return;
  }
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    launch_elementwise(device, n, "fill", Fill<T>{static_cast<T*>(t), common::store<T>(value)});
  });
}

void add_into(int device, DType dtype, void* dst, const void* src, std::int64_t n, float alpha) {
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    launch_elementwise(device, n, "add_into", AddInto<T>{static_cast<T*>(dst), static_cast<const T*>(src), alpha});
  });
}

void fill_uniform(int device, float* t, std::int64_t n, float low, float high, std::uint64_t seed, std::uint64_t offset) {
  launch_elementwise(device, n, "fill_uniform", FillUniform{t, low, high - low, seed, offset});
}

void fill_normal(int device, float* t, std::int64_t n, float mean, float stddev, std::uint64_t seed,
                 std::uint64_t offset) {
  launch_elementwise(device, n, "fill_normal", FillNormal{t, mean, stddev, seed, offset});
}

// ---- a unary op in place over many tensors (clipping), in few launches (multi_tensor.cuh) ----
namespace {

template <UnaryOp Op>
__global__ void unary_in_place_kernel(TensorTable<1> t, UnaryParams params) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* x = static_cast<float*>(t.ptr[0][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) x[i] = common::unary_apply<Op>(x[i], params);
}

}  // namespace

void unary_in_place(int device, UnaryOp op, UnaryParams params, std::span<float* const> tensors,
                    std::span<const std::int64_t> sizes) {
  std::vector<std::array<void*, 1>> pointers;
  for (float* t : tensors) pointers.push_back({t});
  const cudaStream_t stream = compute_stream(device);
  auto run = [&](auto tag) {
    for_each_launch<1>(sizes, pointers, [&](const TensorTable<1>& table, unsigned n) {
      unary_in_place_kernel<decltype(tag)::value><<<n, multi_threads, 0, stream>>>(table, params);
      check_launch("unary_in_place_kernel", __FILE__, __LINE__);
    });
  };
  // Clipping is all that needs it: scaling by a coefficient, and clamping to a range.
  switch (op) {
    case UnaryOp::affine: run(std::integral_constant<UnaryOp, UnaryOp::affine>{}); return;
    case UnaryOp::clamp: run(std::integral_constant<UnaryOp, UnaryOp::clamp>{}); return;
    default: throw_error(cudaErrorNotSupported, "unary_in_place(op other than affine or clamp)", __FILE__, __LINE__);
  }
}

}  // namespace accrue::kernels::cuda
