// Loads the CUDA backend (backend.hpp). Part of the core library, toolkit-free.

#include "cuda_backend.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include <accrue/config.hpp>
#include "../core/error.hpp"

namespace accrue::kernels::cuda {

namespace {

struct Loaded {
  const BackendTable* backend = nullptr;
  std::string why;  // when backend is nullptr
};

// The folder of the library this function is in: the backend is installed beside it.
std::string core_library_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&backend_loads), &info) == 0 || info.dli_fname == nullptr) return {};
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

Loaded load() {
  if (ACCRUE_WITH_CUDA == 0)
    return {nullptr, "this build of Accrue has no CUDA backend (configured with ACCRUE_CUDA=OFF, or CMake did not "
                     "find the CUDA toolkit and cuDNN)"};
  const std::string file = fmt::format("libaccrue_cuda.so.{}.{}", ACCRUE_VERSION_MAJOR, ACCRUE_VERSION_MINOR);
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("ACCRUE_CUDA_BACKEND"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  } else {
    if (const std::string folder = core_library_folder(); !folder.empty()) candidates.push_back(folder + "/" + file);
    candidates.push_back(file);  // the loader's search path
  }
  std::string tried;
  for (const std::string& candidate : candidates) {
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += fmt::format("\n  {}", dlerror());
      continue;
    }
    const auto entry = reinterpret_cast<const BackendTable* (*)()>(dlsym(handle, backend_entry_name));
    if (entry == nullptr) {
      tried += fmt::format("\n  {}: no {} in it, so not Accrue's CUDA backend", candidate, backend_entry_name);
      continue;
    }
    const BackendTable* backend = entry();
    if (std::string_view{backend->version} != ACCRUE_VERSION) {
      tried += fmt::format("\n  {}: from Accrue {}, but this library is Accrue {}", candidate, backend->version,
                           ACCRUE_VERSION);
      continue;
    }
    return {backend, {}};
  }
  return {nullptr, fmt::format("the CUDA backend library ({}) could not be loaded:{}", file, tried)};
}

const Loaded& loaded() {
  static const Loaded once = load();
  return once;
}

}  // namespace

void* backend_function(const char* name) {
  const Loaded& l = loaded();
  if (l.backend == nullptr) throw DeviceError(l.why);
  for (std::size_t i = 0; i < l.backend->count; ++i)
    if (std::string_view{l.backend->functions[i].name} == name) return l.backend->functions[i].address;
  throw InternalError(fmt::format("internal error (a bug in Accrue): the CUDA backend library has no function {}; "
                                  "add it to kernels/cuda/exports.cpp",
                                  name));
}

bool backend_loads(std::string* why) {
  const Loaded& l = loaded();
  if (l.backend == nullptr && why != nullptr) *why = l.why;
  return l.backend != nullptr;
}

}  // namespace accrue::kernels::cuda
