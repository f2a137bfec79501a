#pragma once
// How many CUDA devices this process can use, and why none when there are none.

#include <string>

namespace accrue::kernels {

struct CudaDeviceQuery {
  int count = 0;
  /// Why count is 0: no CUDA backend in this build, no driver, or no device.
  std::string reason;
};

/// Queried once per process; later calls return the cached answer.
const CudaDeviceQuery& cuda_device_count();

namespace cuda {
/// Asks the CUDA runtime (only in builds with the CUDA backend).
CudaDeviceQuery query_devices();
}  // namespace cuda

}  // namespace accrue::kernels
