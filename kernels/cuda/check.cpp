#include "check.hpp"

#include <fmt/format.h>

#include "../../framework/core/error.hpp"

namespace accrue::kernels::cuda {
namespace {

[[noreturn]] void raise(const char* library, int status, const char* name, const char* description, const char* call,
                        const char* file, int line) {
  std::string message = fmt::format("{} error {} ({}): {}\n  in {}\n  at {}:{}", library, name, status, description,
                                    call, file, line);
  // The two failures a user can fix themselves get a hint.
  if (std::string_view{name} == "cudaErrorMemoryAllocation" || std::string_view{name} == "CUBLAS_STATUS_ALLOC_FAILED" ||
      std::string_view{name} == "CUDNN_STATUS_ALLOC_FAILED")
    message += "\n  the GPU is out of memory: lower the micro-batch and raise the accumulation steps";
  if (std::string_view{name} == "cudaErrorNoKernelImageForDevice")
    message += "\n  this build targets sm_80 and sm_90 (and PTX for newer GPUs); set CMAKE_CUDA_ARCHITECTURES for yours";
  throw CudaError(std::move(message), library, call, status);
}

}  // namespace

void throw_error(cudaError_t status, const char* call, const char* file, int line) {
  raise("CUDA runtime", static_cast<int>(status), cudaGetErrorName(status), cudaGetErrorString(status), call, file,
        line);
}

void throw_error(cublasStatus_t status, const char* call, const char* file, int line) {
  raise("cuBLAS", static_cast<int>(status), cublasGetStatusName(status), cublasGetStatusString(status), call, file, line);
}

void throw_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  // cuDNN's string is its status name; the last error message, when there is one, says more.
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  const char* name = cudnnGetErrorString(status);
  raise("cuDNN", static_cast<int>(status), name, detail[0] != '\0' ? detail : name, call, file, line);
}

}  // namespace accrue::kernels::cuda
