#pragma once
// Launch helpers shared by the .cu files: grid-stride loops over functors, dispatch from runtime
// dtypes and ops to template instantiations, and block-wide reductions.
//
// Kernels take functors rather than lambdas so the build needs no --extended-lambda.

#include <cstdint>
#include <type_traits>

#include "../../framework/core/dtype.hpp"
#include "../../framework/core/half.hpp"
#include "check.hpp"
#include "context.hpp"

namespace accrue::kernels::cuda {

inline constexpr int elementwise_threads = 256;

/// `blocks` as a grid's x dimension, which CUDA caps at 2^31 - 1: more is an error naming `what`,
/// never a grid silently cut short by a narrowing cast.
inline unsigned grid_size(std::int64_t blocks, const char* what) {
  if (blocks > 0x7fffffff) throw_error(cudaErrorInvalidConfiguration, what, __FILE__, __LINE__);
  return static_cast<unsigned>(blocks);
}

template <class F>
__global__ void elementwise_kernel(std::int64_t n, F f) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

/// Runs f(i) for i in [0, n) on `device`'s compute stream.
template <class F>
void launch_elementwise(int device, std::int64_t n, const char* kernel, const F& f) {
  if (n <= 0) return;
  const DeviceContext& c = context(device);  // one lookup for the grid and the stream
  elementwise_kernel<<<blocks_for(c, n, elementwise_threads), elementwise_threads, 0, c.compute>>>(n, f);
  check_launch(kernel, __FILE__, __LINE__);
}

/// *p = value, as a one-thread kernel (initialises a flag on the stream, in order).
struct StoreInt {
  int* p;
  int value;
  __device__ void operator()(std::int64_t) const { *p = value; }
};

/// Calls f.template operator()<T>() with the storage type of a float dtype.
template <class F>
void with_float_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f(static_cast<float*>(nullptr)); return;
    case DType::bf16: f(static_cast<bfloat16*>(nullptr)); return;
    case DType::f16: f(static_cast<float16*>(nullptr)); return;
    case DType::i32: break;
  }
  throw_error(cudaErrorInvalidValue, "with_float_type(int32)", __FILE__, __LINE__);
}

struct SumOp {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class T, class Op>
__device__ T warp_all_reduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// The reduction of v over the block, returned to every thread. blockDim.x must be a multiple of
/// 32 and at most 1024; every thread of the block must call it.
template <class T, class Op>
__device__ T block_all_reduce(T v, T identity, Op op) {
  __shared__ T partial[32];
  __shared__ T result;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_all_reduce(v, op);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < static_cast<int>(blockDim.x >> 5) ? partial[lane] : identity;
    w = warp_all_reduce(w, op);
    if (lane == 0) result = w;
  }
  __syncthreads();
  const T r = result;
  __syncthreads();  // a second call may now overwrite partial and result
  return r;
}

}  // namespace accrue::kernels::cuda
