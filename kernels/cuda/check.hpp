#pragma once
// Status checks for the CUDA runtime, cuBLAS and cuDNN. Every call into them goes through
// ACCRUE_CUDA_CHECK, so a failure becomes a CudaError naming the call, the library's error name
// and description, and the file and line, instead of a status nobody reads.
//
// This header is free of fmt and of the framework's headers, so .cu files include it; the
// messages are formatted in check.cpp.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace accrue::kernels::cuda {

[[noreturn]] void throw_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_error(cublasStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_error(cudnnStatus_t status, const char* call, const char* file, int line);

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) [[unlikely]]
    throw_error(status, call, file, line);
}
inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    throw_error(status, call, file, line);
}
inline void check(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS) [[unlikely]]
    throw_error(status, call, file, line);
}

/// After a kernel launch: a bad launch configuration shows up in cudaGetLastError, not in a status.
inline void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) [[unlikely]]
    throw_error(status, kernel, file, line);
}

}  // namespace accrue::kernels::cuda

#define ACCRUE_CUDA_CHECK(call) ::accrue::kernels::cuda::check((call), #call, __FILE__, __LINE__)
#define ACCRUE_CUDA_CHECK_LAUNCH(kernel) \
  ::accrue::kernels::cuda::check_launch("launch of kernel " kernel, __FILE__, __LINE__)
