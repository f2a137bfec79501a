#include "capability.hpp"

#include <array>
#include <atomic>
#include <cstdlib>

#include "../../framework/core/error.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace accrue::kernels::cpu {

namespace {

constexpr std::array<std::string_view, 5> names{"baseline", "avx2", "avx512", "avx512_bf16", "amx"};

#if defined(__x86_64__)
struct Cpuid {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Cpuid cpuid(unsigned leaf, unsigned subleaf) {
  Cpuid r;
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf) return r;  // leaf absent: no features
  __cpuid_count(leaf, subleaf, r.a, r.b, r.c, r.d);
  return r;
}

bool bit(unsigned word, int n) { return ((word >> n) & 1u) != 0; }

// XCR0: which register states the operating system saves on a context switch. An instruction set
// the processor has but whose registers the system does not save cannot be used.
unsigned long long xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

// Linux (5.16 and later) hands a process the AMX tile data state only on request.
bool amx_permitted() {
  constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
  return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
}

Capability detect() {
  const Cpuid l1 = cpuid(1, 0), l7 = cpuid(7, 0), l7s1 = cpuid(7, 1), ext = cpuid(0x80000001u, 0);
  if (!bit(l1.c, 27)) return Capability::baseline;  // OSXSAVE: without it xgetbv faults
  const unsigned long long xcr = xcr0();
  const bool ymm_saved = (xcr & 0x6) == 0x6;     // SSE and AVX state
  const bool zmm_saved = (xcr & 0xe6) == 0xe6;   // and opmask, ZMM_Hi256, Hi16_ZMM
  const bool tiles_saved = (xcr & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  const bool v3 = ymm_saved && bit(l1.c, 28) /*AVX*/ && bit(l7.b, 5) /*AVX2*/ && bit(l1.c, 12) /*FMA*/ &&
                  bit(l1.c, 29) /*F16C*/ && bit(l7.b, 3) /*BMI1*/ && bit(l7.b, 8) /*BMI2*/ &&
                  bit(ext.c, 5) /*LZCNT*/ && bit(l1.c, 22) /*MOVBE*/;
  if (!v3) return Capability::baseline;
  const bool v4 = zmm_saved && bit(l7.b, 16) /*F*/ && bit(l7.b, 17) /*DQ*/ && bit(l7.b, 28) /*CD*/ &&
                  bit(l7.b, 30) /*BW*/ && bit(l7.b, 31) /*VL*/;
  if (!v4) return Capability::avx2;
  if (!bit(l7s1.a, 5)) return Capability::avx512;  // AVX512_BF16
  const bool amx = tiles_saved && bit(l7.d, 24) /*AMX-TILE*/ && bit(l7.d, 22) /*AMX-BF16*/;
  return amx && amx_permitted() ? Capability::amx : Capability::avx512_bf16;
}
#else
Capability detect() { return Capability::baseline; }
#endif

enum class Source { detected, environment, program };

// -1 until the first capability(); written again only by set_capability.
std::atomic<int> chosen{-1};
std::atomic<Source> source{Source::detected};

Capability from_environment() {
  const Capability supported = supported_capability();
  const char* env = std::getenv("ACCRUE_CPU_CAPABILITY");
  if (env == nullptr || *env == '\0') return supported;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] != env) continue;
    const auto level = static_cast<Capability>(i);
    if (level > supported)
      throw ValueError(fmt::format("ACCRUE_CPU_CAPABILITY={} asks for more than this processor and its operating "
                                   "system allow (up to {}); name a level up to that one or unset it",
                                   env, capability_name(supported)));
    source.store(Source::environment);
    return level;
  }
  throw ValueError(fmt::format("ACCRUE_CPU_CAPABILITY={} is none of baseline, avx2, avx512, avx512_bf16, amx", env));
}

}  // namespace

std::string_view capability_name(Capability level) { return names.at(static_cast<std::size_t>(level)); }

Capability supported_capability() {
  static const Capability supported = detect();
  return supported;
}

Capability capability() {
  const int level = chosen.load(std::memory_order_relaxed);
  if (level >= 0) return static_cast<Capability>(level);
  int expected = -1;
  chosen.compare_exchange_strong(expected, static_cast<int>(from_environment()));
  return static_cast<Capability>(chosen.load());
}

void set_capability(Capability level) {
  if (level > supported_capability())
    throw ValueError(fmt::format("the CPU kernels cannot run at {}: this processor and its operating system allow up "
                                 "to {}",
                                 capability_name(level), capability_name(supported_capability())));
  source.store(Source::program);
  chosen.store(static_cast<int>(level));
}

std::string capability_description() {
  const Capability level = capability(), supported = supported_capability();
  switch (source.load()) {
    case Source::detected: break;
    case Source::environment:
      if (level != supported)
        return fmt::format("{} (ACCRUE_CPU_CAPABILITY; this processor allows {})", capability_name(level),
                           capability_name(supported));
      break;
    case Source::program:
      if (level != supported)
        return fmt::format("{} (set by the program; this processor allows {})", capability_name(level),
                           capability_name(supported));
      break;
  }
  return fmt::format("{} (the highest this processor allows)", capability_name(level));
}

}  // namespace accrue::kernels::cpu
