#include "../core/device_query.hpp"

#include "cuda_backend.hpp"

namespace accrue::kernels {

const CudaDeviceQuery& cuda_device_count() {
  static const CudaDeviceQuery answer = [] {
    std::string why;
    if (!cuda::backend_loads(&why)) return CudaDeviceQuery{0, why};
    return ACCRUE_CUDA(query_devices)();
  }();
  return answer;
}

std::vector<CudaLibrary> cuda_libraries() {
  if (!cuda::backend_loads()) return {};
  return ACCRUE_CUDA(query_libraries)();
}

}  // namespace accrue::kernels
