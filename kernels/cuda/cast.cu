// Conversions between the floating-point types on the GPU, rounding as framework/core/half.hpp does on
// the CPU.

#include <type_traits>

#include "cast.hpp"
#include "launch.cuh"

namespace accrue::kernels::cuda {
namespace {

template <class From, class To>
struct Cast {
  const From* src;
  To* dst;
  __device__ void operator()(std::int64_t i) const { dst[i] = common::store<To>(common::load(src[i])); }
};

}  // namespace

void cast(int device, const void* src, DType from, void* dst, DType to, std::int64_t n) {
  with_float_type(from, [&](auto* from_type) {
    using From = std::remove_pointer_t<decltype(from_type)>;
    with_float_type(to, [&](auto* to_type) {
      using To = std::remove_pointer_t<decltype(to_type)>;
      launch_elementwise(device, n, "cast", Cast<From, To>{static_cast<const From*>(src), static_cast<To*>(dst)});
    });
  });
}

}  // namespace accrue::kernels::cuda
