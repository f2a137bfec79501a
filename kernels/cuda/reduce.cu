// Reductions on the GPU. Sums along a dimension accumulate as the CPU kernels do (double for a
// contiguous row, float across rows); the gradient of a broadcast operand follows
// common::SumToShapeIndex.

#include "accrue/kernels/cuda/launch.cuh"
#include "accrue/kernels/cuda/launchers.hpp"

namespace accrue::kernels::cuda {
namespace {

constexpr int reduce_threads = 256;

// inner == 1: one block per row of D contiguous values.
template <class T>
__global__ void sum_rows_kernel(const T* x, std::int64_t D, float scale, float* out, bool accumulate) {
  const T* row = x + static_cast<std::int64_t>(blockIdx.x) * D;
  double s = 0.0;
  for (std::int64_t d = threadIdx.x; d < D; d += blockDim.x) s += common::load(row[d]);
  s = block_all_reduce(s, 0.0, SumOp{});
  if (threadIdx.x == 0) {
    const float v = static_cast<float>(s * scale);
    out[blockIdx.x] = accumulate ? out[blockIdx.x] + v : v;
  }
}

// inner > 1: one thread per output element, walking D rows apart (consecutive threads read
// consecutive addresses).
template <class T>
struct SumStrided {
  const T* x;
  std::int64_t D, inner;
  float scale;
  float* out;
  bool accumulate;
  __device__ void operator()(std::int64_t k) const {
    const std::int64_t o = k / inner, i = k % inner;
    const T* p = x + o * D * inner + i;
    float s = 0.0f;
    for (std::int64_t d = 0; d < D; ++d) s += common::load(p[d * inner]);
    const float v = s * scale;
    out[k] = accumulate ? out[k] + v : v;
  }
};

struct ExpandDim {
  const float* g;
  std::int64_t D, inner;
  float scale;
  float* out;
  bool accumulate;
  __device__ void operator()(std::int64_t k) const {
    const std::int64_t o = k / (D * inner), i = k % inner;
    const float v = scale * g[o * inner + i];
    out[k] = accumulate ? out[k] + v : v;
  }
};

struct SumToShapeThread {
  const float* dy;
  float* d;
  common::SumToShapeIndex index;
  float scale;
  bool accumulate;
  __device__ void operator()(std::int64_t j) const {
    const std::int64_t base = index.base(j);
    float s = 0.0f;
    for (std::int64_t r = 0; r < index.reduced_count; ++r) s += dy[base + index.reduced_offset(r)];
    const float v = scale * s;
    d[j] = accumulate ? d[j] + v : v;
  }
};

// Few outputs, each a sum of many values (a bias gradient of a large batch, a scalar): one block
// per output.
__global__ void sum_to_shape_block_kernel(const float* dy, float* d, common::SumToShapeIndex index, float scale,
                                          bool accumulate) {
  const std::int64_t j = blockIdx.x;
  const std::int64_t base = index.base(j);
  float s = 0.0f;
  for (std::int64_t r = threadIdx.x; r < index.reduced_count; r += blockDim.x) s += dy[base + index.reduced_offset(r)];
  s = block_all_reduce(s, 0.0f, SumOp{});
  if (threadIdx.x == 0) {
    const float v = scale * s;
    d[j] = accumulate ? d[j] + v : v;
  }
}

struct ArgmaxRows {
  const float* x;
  std::int64_t C;
  std::int32_t* out;
  __device__ void operator()(std::int64_t r) const {
    const float* row = x + r * C;
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < C; ++j)
      if (row[j] > row[best]) best = j;
    out[r] = static_cast<std::int32_t>(best);
  }
};

}  // namespace

void sum_dim(int device, DType x_type, const void* x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale,
             float* out, bool accumulate) {
  with_float_type(x_type, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    const T* xt = static_cast<const T*>(x);
    if (inner == 1) {
      if (outer == 0) return;
      sum_rows_kernel<T><<<grid_size(outer, "sum_dim: more than 2^31 - 1 rows"), reduce_threads, 0, compute_stream(device)>>>(xt, D, scale, out,
                                                                                                       accumulate);
      check_launch("sum_rows_kernel", __FILE__, __LINE__);
      return;
    }
    launch_elementwise(device, outer * inner, "sum_dim", SumStrided<T>{xt, D, inner, scale, out, accumulate});
  });
}

void expand_dim(int device, const float* g, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale,
                float* out, bool accumulate) {
  launch_elementwise(device, outer * D * inner, "expand_dim", ExpandDim{g, D, inner, scale, out, accumulate});
}

void sum_to_shape(int device, const float* dy, float* d, std::int64_t d_numel, const common::SumToShapeIndex& index,
                  float scale, bool accumulate) {
  if (d_numel == 0) return;
  if (d_numel < 4096 && index.reduced_count >= 1024) {
    sum_to_shape_block_kernel<<<grid_size(d_numel, "sum_to_shape: more than 2^31 - 1 outputs"), reduce_threads, 0, compute_stream(device)>>>(
        dy, d, index, scale, accumulate);
    check_launch("sum_to_shape_block_kernel", __FILE__, __LINE__);
    return;
  }
  launch_elementwise(device, d_numel, "sum_to_shape", SumToShapeThread{dy, d, index, scale, accumulate});
}

void argmax_rows(int device, const float* x, std::int64_t rows, std::int64_t C, std::int32_t* out) {
  launch_elementwise(device, rows, "argmax_rows", ArgmaxRows{x, C, out});
}

}  // namespace accrue::kernels::cuda
