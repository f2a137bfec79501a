#pragma once
// The CUDA backend is a library of its own, libaccrue_cuda.so, loaded with dlopen the first time a
// CUDA device is asked for: the core library and a CPU program link none of CUDA's libraries, and
// a machine without them runs everything on the CPU. The core calls the backend's functions,
// declared in the toolkit-free kernels/cuda/*.hpp, through the table the backend hands it
// (kernels/cuda/exports.cpp lists them):
//
//   ACCRUE_CUDA(unary_forward)(index, op, ...)     where kernels/elementwise.cpp calls the CUDA body
//
// with the type of cuda::unary_forward's declaration, so a call that does not match it does not
// compile. Part of the device runtime: toolkit-free, includes nothing above framework's core.

#include <cstddef>
#include <string>

namespace accrue::kernels::cuda {

/// One of the backend's functions.
struct BackendFunction {
  const char* name;  // "unary_forward", as in kernels/cuda/*.hpp
  void* address;
};

/// What libaccrue_cuda.so hands the core: the version of the build it comes from (the core
/// refuses another) and its functions.
struct BackendTable {
  const char* version;
  const BackendFunction* functions;
  std::size_t count;
};

/// The function libaccrue_cuda.so exports (extern "C") for the core to find with dlsym.
inline constexpr const char* backend_entry_name = "accrue_cuda_backend";

/// The address of the backend's function `name`. Loads libaccrue_cuda.so at the first call
/// (ACCRUE_CUDA_BACKEND names the file; by default the one beside libaccrue.so, else the loader's
/// search); throws DeviceError saying why when this build has no CUDA backend or the library
/// cannot be loaded.
void* backend_function(const char* name);

/// Whether the backend loads, and why not: for cuda_device_count()'s reason.
bool backend_loads(std::string* why = nullptr);

}  // namespace accrue::kernels::cuda

/// The CUDA backend's function cuda::name, typed as its declaration (which the caller includes);
/// looked up once per call site.
#define ACCRUE_CUDA(name)                                                                                    \
  ([] {                                                                                                      \
    static const auto function = reinterpret_cast<decltype(&::accrue::kernels::cuda::name)>(                 \
        ::accrue::kernels::cuda::backend_function(#name));                                                   \
    return function;                                                                                         \
  }())
