#pragma once
// CPU kernels compiled once per instruction set, one of them chosen at run time.
//
// The kernel files whose loops the compiler vectorises (elementwise, reduce, the optimizer
// updates, ...) are compiled three times on x86-64: for baseline x86-64 with the rest of the
// library, with -march=x86-64-v3 and with -march=x86-64-v4 (CMake's ACCRUE_CPU_VARIANT_SOURCES).
// Each compilation defines its functions in the namespace of its variant, cpu::baseline, cpu::avx2
// or cpu::avx512. A header declares such a function once:
//
//   ACCRUE_CPU_KERNEL(fill, void(float* t, std::int64_t n, float value));
//
// which declares cpu::baseline::fill, cpu::avx2::fill and cpu::avx512::fill, and makes cpu::fill
// an object whose call runs the variant capability() picks: avx512 at levels avx512 and above,
// avx2 at avx2. Code inside a variant calls its own variant's functions directly. A kernel that is
// a template over one type (the optimizer update, over its rule) is declared with
//
//   ACCRUE_CPU_KERNEL_TEMPLATE(optimizer_update, Rule, void, (const typename Rule::Hyper& hyper));
//
// and its file instantiates it for each type it runs with.
//
// Inline functions and templates that several compilations share are emitted by each of them,
// and the linker keeps the first copy it meets. The library is linked as one shared object with
// the variants' objects after the baseline's (CMakeLists.txt), so every shared copy it keeps is one
// any processor runs. (A static archive would not keep that order: its members are taken in the
// order a program's symbols ask for them, so the library is always built shared.)

#include <type_traits>
#include <utility>

#include "capability.hpp"

#if !defined(ACCRUE_CPU_VARIANT)
#define ACCRUE_CPU_VARIANT baseline
#endif

namespace accrue::kernels::cpu {

/// The variants the vectorised kernel files are compiled in.
enum class Variant { baseline, avx2, avx512 };

/// The variant that runs at capability().
inline Variant variant() {
  const Capability level = capability();
  if (level >= Capability::avx512) return Variant::avx512;
  if (level >= Capability::avx2) return Variant::avx2;
  return Variant::baseline;
}

/// Calls the variant of a kernel that variant() picks.
template <auto Baseline, auto Avx2, auto Avx512>
struct ByVariant {
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    switch (variant()) {
      case Variant::avx512: return Avx512(std::forward<Args>(args)...);
      case Variant::avx2: return Avx2(std::forward<Args>(args)...);
      case Variant::baseline: break;
    }
    return Baseline(std::forward<Args>(args)...);
  }
};

}  // namespace accrue::kernels::cpu

#if defined(__x86_64__) && !defined(ACCRUE_NO_CPU_VARIANTS)
// The declarations, once in each variant's namespace; the variants' functions, for ByVariant.
#define ACCRUE_IN_EACH_CPU_VARIANT(...) \
  namespace baseline {                  \
  __VA_ARGS__                           \
  }                                     \
  namespace avx2 {                      \
  __VA_ARGS__                           \
  }                                     \
  namespace avx512 {                    \
  __VA_ARGS__                           \
  }
#define ACCRUE_CPU_VARIANTS_OF(name) &baseline::name, &avx2::name, &avx512::name
#else
// Other processors, and builds configured with -DACCRUE_CPU_VARIANTS=OFF, compile the baseline
// variant only.
#define ACCRUE_IN_EACH_CPU_VARIANT(...) \
  namespace baseline {                  \
  __VA_ARGS__                           \
  }
#define ACCRUE_CPU_VARIANTS_OF(name) &baseline::name, &baseline::name, &baseline::name
#endif

#define ACCRUE_CPU_KERNEL(name, ...)                                   \
  ACCRUE_IN_EACH_CPU_VARIANT(std::type_identity_t<__VA_ARGS__> name;) \
  inline constexpr ByVariant<ACCRUE_CPU_VARIANTS_OF(name)> name {}
#define ACCRUE_CPU_KERNEL_TEMPLATE(name, T, result, parameters)  \
  ACCRUE_IN_EACH_CPU_VARIANT(template <class T> result name parameters;) \
  template <class T>                                             \
  inline constexpr ByVariant<ACCRUE_CPU_VARIANTS_OF(name<T>)> name {}
