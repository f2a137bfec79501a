#pragma once
// How many CUDA devices this process can use, and why none when there are none. Declared in the
// core, which asks it (Device::cuda); defined by the runtime above it (framework/runtime/
// device_query.cpp) and, for the query itself, by the CUDA backend (kernels/cuda/device_query.cpp).

#include <string>
#include <vector>

namespace accrue::kernels {

struct CudaDeviceQuery {
  int count = 0;
  /// Why count is 0: no CUDA backend in this build, no driver, or no device.
  std::string reason;
};

/// Queried once per process; later calls return the cached answer.
const CudaDeviceQuery& cuda_device_count();

/// One library the CUDA backend uses: the version it was built with, the one loaded, and where
/// the loaded one lives.
struct CudaLibrary {
  std::string name;   // "cuDNN"
  int built = 0;      // as the library numbers it: cuDNN 9.1.0 is 90100, CUDA 13.0 is 13000
  int found = 0;      // 0: not loaded, or no driver (for the driver)
  std::string path;   // the file loaded, when the library can tell
  /// Whether the loaded one can stand in for the built one: the same major version (these
  /// libraries keep their interface within a major version, and Accrue calls only what x.0 has).
  bool compatible = false;
  /// Loaded with an older minor version than built with (said, not refused).
  bool older_minor = false;
  std::string built_version, found_version;  // "9.1.0"
};

/// The CUDA runtime, the driver, cuBLAS and cuDNN as this process sees them; empty in builds
/// without the CUDA backend. Needs no device.
std::vector<CudaLibrary> cuda_libraries();

namespace cuda {
/// Asks the CUDA runtime (only in builds with the CUDA backend).
CudaDeviceQuery query_devices();
std::vector<CudaLibrary> query_libraries();
}  // namespace cuda

}  // namespace accrue::kernels
