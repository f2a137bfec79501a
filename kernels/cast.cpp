#include "accrue/kernels/cast.hpp"

#include "accrue/config.hpp"
#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

void cast(const Tensor& src, const Tensor& dst) {
  ACCRUE_ASSERT(src.numel() == dst.numel() && src.device() == dst.device());
  ACCRUE_CHECK(is_floating(src.dtype()) && is_floating(dst.dtype()), "cast between {} and {}: only floating-point dtypes convert",
               dtype_name(src.dtype()), dtype_name(dst.dtype()));
  dst.bump_version();
  if (dst.device().is_cpu()) return cpu::cast(src.data_ptr(), src.dtype(), dst.data_ptr(), dst.dtype(), dst.numel());
#if ACCRUE_WITH_CUDA
  if (dst.device().is_cuda())
    return cuda::cast(dst.device().index(), src.data_ptr(), src.dtype(), dst.data_ptr(), dst.dtype(), dst.numel());
#endif
  unsupported_device("cast", dst.device());
}

}  // namespace accrue::kernels
