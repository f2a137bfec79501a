// Dropout on the GPU: the mask of common/dropout.hpp, drawn from the same counter-based
// generator as on the CPU, so both backends drop the same elements.

#include <type_traits>

#include "../common/dropout.hpp"
#include "dropout.hpp"
#include "launch.cuh"

namespace accrue::kernels::cuda {
namespace {

template <class T>
struct Dropout {
  const T* in;
  T* out;
  float p, scale;
  std::uint64_t seed, offset;
  bool accumulate;
  __device__ void operator()(std::int64_t i) const {
    const float v = common::load(in[i]) * common::dropout_factor(seed, offset, static_cast<std::uint64_t>(i), p, scale);
    out[i] = common::store<T>(accumulate ? common::load(out[i]) + v : v);
  }
};

}  // namespace

void dropout_apply(int device, DType dtype, const void* in, void* out, std::int64_t n, float p, std::uint64_t seed,
                   std::uint64_t offset, bool accumulate) {
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    launch_elementwise(device, n, "dropout",
                       Dropout<T>{static_cast<const T*>(in), static_cast<T*>(out), p, 1.0f / (1.0f - p), seed, offset,
                                  accumulate});
  });
}

}  // namespace accrue::kernels::cuda
