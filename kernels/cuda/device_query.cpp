// The CUDA runtime's view of the machine: host code over the runtime's C API, compiled only when
// the CUDA backend is built. (.cu files leave message formatting to host code: nvcc cannot
// compile fmt 9's constexpr formatting.)

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "accrue/kernels/device_query.hpp"

namespace accrue::kernels::cuda {

CudaDeviceQuery query_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // No driver or no device is an answer here, not an error: the caller decides whether it matters.
    const char* meaning = status == cudaErrorInsufficientDriver ? "no NVIDIA driver is loaded, or it is older than this CUDA runtime"
                          : status == cudaErrorNoDevice         ? "no CUDA-capable GPU is visible"
                                                                : "the CUDA runtime cannot start";
    return CudaDeviceQuery{0, fmt::format("{}: cudaGetDeviceCount failed with {} ({})", meaning, cudaGetErrorName(status),
                                          cudaGetErrorString(status))};
  }
  if (count == 0) return CudaDeviceQuery{0, "the CUDA runtime reports no device"};
  return CudaDeviceQuery{count, {}};
}

}  // namespace accrue::kernels::cuda
