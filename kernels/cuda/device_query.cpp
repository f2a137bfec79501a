// The CUDA runtime's view of the machine: host code over the runtime's C API, compiled only when
// the CUDA backend is built. (.cu files leave message formatting to host code: nvcc cannot
// compile fmt 9's constexpr formatting.)

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include "../../framework/core/device_query.hpp"

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

namespace {

// The file that holds `symbol`, as the dynamic loader resolved it.
std::string library_of(const void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "(linked into the program)";
}

// major.minor.patch from the library's numbering: `major_unit` per major, `minor_unit` per minor.
std::string dotted(int v, int major_unit, int minor_unit) {
  if (v == 0) return "none";
  return fmt::format("{}.{}.{}", v / major_unit, v % major_unit / minor_unit, v % minor_unit);
}

CudaLibrary library(std::string name, int built, int found, std::string path, int major_unit, int minor_unit) {
  CudaLibrary l;
  l.name = std::move(name);
  l.built = built;
  l.found = found;
  l.path = std::move(path);
  l.compatible = found != 0 && found / major_unit == built / major_unit;
  l.older_minor = l.compatible && found < built / minor_unit * minor_unit;
  l.built_version = dotted(built, major_unit, minor_unit);
  l.found_version = dotted(found, major_unit, minor_unit);
  return l;
}

}  // namespace

std::vector<CudaLibrary> query_libraries() {
  std::vector<CudaLibrary> libraries;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);  // 0 without a driver
  libraries.push_back(library("CUDA runtime", CUDART_VERSION, runtime,
                              library_of(reinterpret_cast<const void*>(&cudaRuntimeGetVersion)), 1000, 10));
  // The driver must support at least the runtime's CUDA version; a newer driver serves older runtimes.
  CudaLibrary d = library("NVIDIA driver (the CUDA version it serves)", CUDART_VERSION, driver, "", 1000, 10);
  d.compatible = driver >= CUDART_VERSION;
  libraries.push_back(d);
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  libraries.push_back(library("cuBLAS", CUBLAS_VER_MAJOR * 10000 + CUBLAS_VER_MINOR * 100 + CUBLAS_VER_PATCH,
                              major * 10000 + minor * 100 + patch,
                              library_of(reinterpret_cast<const void*>(&cublasGetProperty)), 10000, 100));
  libraries.push_back(library("cuDNN", CUDNN_VERSION, static_cast<int>(cudnnGetVersion()),
                              library_of(reinterpret_cast<const void*>(&cudnnGetVersion)), 10000, 100));
  return libraries;
}

}  // namespace accrue::kernels::cuda
