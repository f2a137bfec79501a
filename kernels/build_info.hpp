#pragma once
// What this build of Accrue contains and what it runs with on this machine: for `--version`,
// logs and bug reports.

#include <string>

#include "cpu/capability.hpp"

namespace accrue {

struct BuildInfo {
  /// ACCRUE_VERSION, "0.1.0".
  std::string version;
  /// The compiler that built the library, "GCC 12.2.0".
  std::string compiler;
  /// The level the CPU kernels run at, and the highest this processor allows
  /// (kernels/cpu/capability.hpp; ACCRUE_CPU_CAPABILITY lowers the first).
  kernels::cpu::Capability cpu_kernels{}, cpu_supported{};
  /// Both in words: "avx2 (ACCRUE_CPU_CAPABILITY; this processor allows avx512_bf16)".
  std::string cpu_kernels_description;
  /// How bfloat16 products run on this CPU: "AMX tiles", "AVX-512 BF16", or widened to float32.
  std::string cpu_bfloat16;
  /// Whether the CUDA backend was built, and the devices it sees (or why none).
  bool cuda_backend = false;
  std::string cuda_devices;
  /// The data-parallel backends built in.
  bool mpi = false, nccl = false;

  /// A few lines, the first "Accrue 0.1.0 (GCC 12.2.0)".
  std::string str() const;
};

/// Asks the processor, and the CUDA backend when built, on every call.
BuildInfo build_info();

}  // namespace accrue
