#include "cast.hpp"

#include "cpu/cast.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/cast.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

void cast(const Tensor& src, const Tensor& dst) {
  ACCRUE_ASSERT(src.numel() == dst.numel() && src.device() == dst.device());
  ACCRUE_CHECK(is_floating(src.dtype()) && is_floating(dst.dtype()), "cast between {} and {}: only floating-point dtypes convert",
               dtype_name(src.dtype()), dtype_name(dst.dtype()));
  dst.bump_version();
  return dispatch(
      Op::cast, dst.device(), src.dtype(),
      [&] {
        return cpu::cast(src.data_ptr(), src.dtype(), dst.data_ptr(), dst.dtype(), dst.numel());
      },
      [&](int index) {
        return ACCRUE_CUDA(cast)(index, src.data_ptr(), src.dtype(), dst.data_ptr(), dst.dtype(), dst.numel());
      });
}

}  // namespace accrue::kernels
