// Permute on the GPU: one thread per output element, reading the input where common/permute.hpp
// says (the same arithmetic as the CPU's).

#include <cstdint>
#include <type_traits>

#include "../common/permute.hpp"
#include "launch.cuh"
#include "permute.hpp"

namespace accrue::kernels::cuda {
namespace {

template <class T>
struct Permute {
  const T* x;
  T* y;
  common::PermuteIndex index;
  bool accumulate;
  __device__ void operator()(std::int64_t i) const {
    common::store_or_add(y[i], x[index.source(i)], accumulate);
  }
};

template <class T>
void run(int device, const void* x, void* y, std::int64_t n, const common::PermuteIndex& index, bool accumulate) {
  launch_elementwise(device, n, "permute", Permute<T>{static_cast<const T*>(x), static_cast<T*>(y), index, accumulate});
}

}  // namespace

void permute(int device, DType dtype, const void* x, void* y, std::int64_t n, const common::PermuteIndex& index,
             bool accumulate) {
  if (dtype == DType::i32) return run<std::int32_t>(device, x, y, n, index, accumulate);
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    run<T>(device, x, y, n, index, accumulate);
  });
}

}  // namespace accrue::kernels::cuda
