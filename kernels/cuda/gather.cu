// Gather and scatter-add of rows on the GPU: one thread per element of the rows moved.

#include <cstdint>
#include <type_traits>

#include "gather.hpp"
#include "launch.cuh"

namespace accrue::kernels::cuda {
namespace {

template <class T>
struct GatherRows {
  const T* table;
  const std::int32_t* indices;
  T* out;
  std::int64_t D;
  __device__ void operator()(std::int64_t e) const {
    const std::int64_t i = e / D, d = e % D;
    out[e] = table[static_cast<std::int64_t>(indices[i]) * D + d];
  }
};

struct ScatterAddRows {
  const float* grad;
  const std::int32_t* indices;
  float* table_grad;
  std::int64_t D, skip;
  __device__ void operator()(std::int64_t e) const {
    const std::int64_t i = e / D, d = e % D;
    if (indices[i] == skip) return;
    atomicAdd(table_grad + static_cast<std::int64_t>(indices[i]) * D + d, grad[e]);
  }
};

}  // namespace

void gather_rows(int device, DType dtype, const void* table, const std::int32_t* indices, void* out, std::int64_t n,
                 std::int64_t D) {
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    launch_elementwise(device, n * D, "gather_rows",
                       GatherRows<T>{static_cast<const T*>(table), indices, static_cast<T*>(out), D});
  });
}

void scatter_add_rows(int device, const float* grad, const std::int32_t* indices, float* table_grad, std::int64_t n,
                      std::int64_t D, std::int64_t skip) {
  launch_elementwise(device, n * D, "scatter_add_rows", ScatterAddRows{grad, indices, table_grad, D, skip});
}

}  // namespace accrue::kernels::cuda
