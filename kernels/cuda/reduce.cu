// Reductions on the GPU. Sums along a dimension accumulate as the CPU kernels do (double for a
// contiguous row, float across rows); the gradient of a broadcast operand follows
// common::SumToShapeIndex.

#include "../common/row_sums.hpp"
#include "launch.cuh"
#include "reduce.hpp"
#include "context.hpp"
#include "multi_tensor.cuh"

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

// Few long rows: block (c, row) sums chunk c of its row into partial[row * gridDim.x + c].
template <class T>
__global__ void sum_row_chunks_kernel(const T* x, std::int64_t D, std::int64_t chunk, double* partial) {
  const std::int64_t row = blockIdx.y, c = blockIdx.x;
  const T* p = x + row * D;
  const std::int64_t end = c * chunk + chunk < D ? c * chunk + chunk : D;
  double s = 0.0;
  for (std::int64_t d = c * chunk + threadIdx.x; d < end; d += blockDim.x) s += common::load(p[d]);
  s = block_all_reduce(s, 0.0, SumOp{});
  if (threadIdx.x == 0) partial[row * gridDim.x + c] = s;
}

// Then one block per row adds its chunks' partial sums.
__global__ void sum_partial_rows_kernel(const double* partial, std::int64_t chunks, float scale, float* out,
                                        bool accumulate) {
  const double* p = partial + static_cast<std::int64_t>(blockIdx.x) * chunks;
  double s = 0.0;
  for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) s += p[c];
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

std::int64_t sum_dim_partials(std::int64_t outer, std::int64_t D, std::int64_t inner) {
  const common::RowSplit split = common::split_rows(outer, D);
  return inner == 1 && split.chunks > 1 ? outer * split.chunks : 0;
}

void sum_dim(int device, DType x_type, const void* x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale,
             float* out, bool accumulate, double* scratch) {
  with_float_type(x_type, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    const T* xt = static_cast<const T*>(x);
    if (inner == 1) {
      if (outer == 0) return;
      if (sum_dim_partials(outer, D, inner) > 0) {
        const common::RowSplit split = common::split_rows(outer, D);
        // outer < split_rows' target of 1024 blocks, so it fits the grid's y dimension.
        sum_row_chunks_kernel<T><<<dim3(static_cast<unsigned>(split.chunks), static_cast<unsigned>(outer)), reduce_threads,
                                   0, compute_stream(device)>>>(xt, D, split.chunk, scratch);
        check_launch("sum_row_chunks_kernel", __FILE__, __LINE__);
        sum_partial_rows_kernel<<<static_cast<unsigned>(outer), reduce_threads, 0, compute_stream(device)>>>(
            scratch, split.chunks, scale, out, accumulate);
        check_launch("sum_partial_rows_kernel", __FILE__, __LINE__);
        return;
      }
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

// ---- the global L2 norm's sum of squares over many tensors (multi_tensor.cuh) ----
namespace {

// Block b writes its partial sum to partial[first_block + b]; a second kernel adds the partials
// in order, so the result does not depend on scheduling.
__global__ void sum_of_squares_kernel(TensorTable<1> t, double* partial, std::int64_t first_block) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  const float* x = static_cast<const float*>(t.ptr[0][s]);
  double sum = 0.0;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) sum += static_cast<double>(x[i]) * x[i];
  sum = block_all_reduce(sum, 0.0, SumOp{});
  if (threadIdx.x == 0) partial[first_block + blockIdx.x] = sum;
}

__global__ void sum_partials_kernel(const double* partial, std::int64_t count, double* out) {
  double sum = 0.0;
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
  sum = block_all_reduce(sum, 0.0, SumOp{});
  if (threadIdx.x == 0) *out = sum;
}

}  // namespace

std::int64_t sum_of_squares_partials(std::span<const std::int64_t> sizes) {
  std::int64_t blocks = 0;
  for (const auto& l : common::plan_multi_tensor(sizes, table_tensors, table_blocks, chunk_elements))
    blocks += static_cast<std::int64_t>(l.block_slot.size());
  return blocks + 1;  // the last slot holds the total
}

double sum_of_squares(int device, std::span<const float* const> tensors, std::span<const std::int64_t> sizes,
                      double* scratch) {
  std::vector<std::array<void*, 1>> pointers;
  for (const float* t : tensors) pointers.push_back({const_cast<float*>(t)});
  const cudaStream_t stream = compute_stream(device);
  std::int64_t blocks = 0;
  for_each_launch<1>(sizes, pointers, [&](const TensorTable<1>& table, unsigned n) {
    sum_of_squares_kernel<<<n, multi_threads, 0, stream>>>(table, scratch, blocks);
    check_launch("sum_of_squares_kernel", __FILE__, __LINE__);
    blocks += n;
  });
  if (blocks == 0) return 0.0;
  sum_partials_kernel<<<1, 1024, 0, stream>>>(scratch, blocks, scratch + blocks);
  check_launch("sum_partials_kernel", __FILE__, __LINE__);
  double total = 0.0;
  copy_device_to_host(device, &total, scratch + blocks, sizeof total);
  return total;
}

}  // namespace accrue::kernels::cuda
