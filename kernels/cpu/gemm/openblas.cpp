#include "openblas.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "../../../framework/core/error.hpp"
#include "../../../framework/core/log.hpp"
#include "../capability.hpp"

#ifndef ACCRUE_OPENBLAS_LIBRARY
#define ACCRUE_OPENBLAS_LIBRARY "libopenblas.so.0"
#endif

namespace accrue::kernels::cpu {
namespace {

// Sets an environment variable for the duration of one scope, then restores it, so that choices
// made for loading OpenBLAS do not leak into child processes.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (value.empty() || std::getenv(name) != nullptr) return;
    setenv(name, value.c_str(), 0);
    set_ = true;
  }
  ~ScopedEnv() {
    if (set_) unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  bool set() const { return set_; }

 private:
  const char* name_;
  bool set_ = false;
};

template <class F>
F symbol(void* handle, const char* name, const std::string& library) {
  void* s = dlsym(handle, name);
  if (s == nullptr) throw IoError(fmt::format("{} does not export {}: is it OpenBLAS?", library, name));
  return reinterpret_cast<F>(s);
}

OpenBlas load() {
  const std::vector<std::string> candidates = {ACCRUE_OPENBLAS_LIBRARY, "libopenblas.so.0", "libopenblas.so"};
  OpenBlas result;
  void* handle = nullptr;
  for (const auto& c : candidates) {
    if ((handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) != nullptr) {
      result.library = c;
      result.how_chosen = "OpenBLAS was already loaded by this process; its own choice stands";
      break;
    }
  }
  if (handle == nullptr) {
    const std::string core = openblas_core_for_this_cpu();
    const ScopedEnv coretype{"OPENBLAS_CORETYPE", core};
    const ScopedEnv threads{"OPENBLAS_NUM_THREADS", "1"};
    std::string errors;
    for (const auto& c : candidates) {
      if ((handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) {
        result.library = c;
        break;
      }
      errors += fmt::format("\n  {}: {}", c, dlerror());
    }
    if (handle == nullptr)
      throw IoError(fmt::format("OpenBLAS could not be loaded; install it with `apt-get install libopenblas0` "
                                "(libopenblas-dev to build). Tried:{}", errors));
    if (coretype.set())
      result.how_chosen = fmt::format("chosen by Accrue from the processor's instruction set (OPENBLAS_CORETYPE={})", core);
    else if (std::getenv("OPENBLAS_CORETYPE") != nullptr)
      result.how_chosen = fmt::format("OPENBLAS_CORETYPE={} from the environment", std::getenv("OPENBLAS_CORETYPE"));
    else
      result.how_chosen = "OpenBLAS's own detection";
  }
  result.sgemm = symbol<OpenBlas::Sgemm>(handle, "cblas_sgemm", result.library);
  symbol<void (*)(int)>(handle, "openblas_set_num_threads", result.library)(1);
  result.core = symbol<char* (*)()>(handle, "openblas_get_corename", result.library)();
  log::debug("OpenBLAS {} with its {} kernels ({})", result.library, result.core, result.how_chosen);
  return result;
}

}  // namespace

std::string openblas_core_for_this_cpu() {
#if defined(__x86_64__)
  switch (capability()) {
    case Capability::amx:
    case Capability::avx512_bf16: return "Cooperlake";
    case Capability::avx512: return "SkylakeX";
    case Capability::avx2: return "Haswell";
    case Capability::baseline:
      // A processor below AVX2 is left to OpenBLAS's own choice; one forced down to baseline gets
      // OpenBLAS's SSE3 kernels, so that no AVX runs at all.
      if (supported_capability() > Capability::baseline) return "Prescott";
      break;
  }
#endif
  return "";
}

const OpenBlas& openblas() {
  static const OpenBlas instance = load();
  return instance;
}

}  // namespace accrue::kernels::cpu
