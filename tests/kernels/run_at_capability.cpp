// run_at_capability LEVEL PROGRAM [ARGS...]: runs PROGRAM with ACCRUE_CPU_CAPABILITY=LEVEL, so that
// ctest runs the kernel suites once per instruction-set variant; exits 77 (ctest's skip), saying
// so, where this processor cannot run LEVEL, or where LEVEL is its highest (the suite's own ctest
// run, unforced, is at that level already).
//
// run_at_capability --list: the levels this processor runs, one per line.

#include <unistd.h>

#include <accrue/kernels/cpu/capability.hpp>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

using namespace accrue::kernels::cpu;

int main(int argc, char** argv) {
  const Capability supported = supported_capability();
  if (argc == 2 && std::string_view{argv[1]} == "--list") {
    for (int level = 0; level <= static_cast<int>(supported); ++level)
      std::printf("%s\n", capability_name(static_cast<Capability>(level)).data());
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: run_at_capability LEVEL PROGRAM [ARGS...] | --list\n");
    return 1;
  }
  const std::string_view wanted = argv[1];
  for (int level = 0; level <= static_cast<int>(Capability::amx); ++level) {
    if (capability_name(static_cast<Capability>(level)) != wanted) continue;
    if (level > static_cast<int>(supported)) {
      std::printf("SKIPPED: %s at CPU capability %s: this processor allows up to %s\n", argv[2], argv[1],
                  capability_name(supported).data());
      return 77;
    }
    if (level == static_cast<int>(supported)) {
      std::printf("SKIPPED: %s at CPU capability %s: the suite's own run is at that level on this processor\n",
                  argv[2], argv[1]);
      return 77;
    }
    setenv("ACCRUE_CPU_CAPABILITY", argv[1], 1);
    execv(argv[2], argv + 2);
    std::fprintf(stderr, "run_at_capability: cannot run %s: %s\n", argv[2], std::strerror(errno));
    return 1;
  }
  std::fprintf(stderr, "run_at_capability: %s is none of baseline, avx2, avx512, avx512_bf16, amx\n", argv[1]);
  return 1;
}
