#pragma once
// Which instruction set the CPU kernels run with, chosen at run time.
//
// The library is compiled for baseline x86-64. The kernel files whose loops the compiler
// vectorises are compiled once more per variant (variant.hpp says how); the kernels written with
// intrinsics carry their instruction set as a target attribute. Both pick by capability(): what the
// processor and the operating system allow, found once with cpuid, xgetbv and (for AMX) the
// arch_prctl permission, or a lower level that ACCRUE_CPU_CAPABILITY asks for.

#include <string>
#include <string_view>

namespace accrue::kernels::cpu {

/// Instruction-set levels, each including the ones before it:
///   baseline     x86-64 (SSE2)
///   avx2         AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE (x86-64-v3)
///   avx512       AVX-512 F, BW, CD, DQ, VL (x86-64-v4)
///   avx512_bf16  and AVX-512 BF16 (bfloat16 dot products)
///   amx          and AMX tiles with bfloat16, permitted by the kernel
enum class Capability { baseline, avx2, avx512, avx512_bf16, amx };

/// "baseline", "avx2", "avx512", "avx512_bf16", "amx".
std::string_view capability_name(Capability level);

/// The highest level this processor and operating system allow. Asks Linux for the AMX tile state
/// (arch_prctl) the first time, on processors that have AMX.
Capability supported_capability();

/// The level the kernels run at: supported_capability(), or the lower level ACCRUE_CPU_CAPABILITY
/// names. Read at the first call; an unknown name, or a level above supported_capability(), throws
/// ValueError naming the variable and what this processor supports.
Capability capability();

/// Runs the kernels at `level` from now on, in every thread (tests and benchmarks compare the
/// variants in one process this way). Throws ValueError above supported_capability().
void set_capability(Capability level);

/// "avx512_bf16 (the highest this processor allows)" or "avx2 (ACCRUE_CPU_CAPABILITY; this processor
/// allows avx512_bf16)": for banners and build_info().
std::string capability_description();

}  // namespace accrue::kernels::cpu
