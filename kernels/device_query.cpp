#include "accrue/kernels/device_query.hpp"

#include "accrue/config.hpp"
#if ACCRUE_WITH_CUDA
#include "accrue/kernels/cuda/context.hpp"
#endif

namespace accrue::kernels {

const CudaDeviceQuery& cuda_device_count() {
  static const CudaDeviceQuery answer = [] {
#if ACCRUE_WITH_CUDA
    return cuda::query_devices();
#else
    return CudaDeviceQuery{0, "this build of Accrue has no CUDA backend (configured with ACCRUE_CUDA=OFF, or CMake "
                              "did not find the CUDA toolkit and cuDNN)"};
#endif
  }();
  return answer;
}

std::vector<CudaLibrary> cuda_libraries() {
#if ACCRUE_WITH_CUDA
  return cuda::query_libraries();
#else
  return {};
#endif
}

}  // namespace accrue::kernels
