#pragma once
// OpenBLAS, loaded at first use.
//
// OpenBLAS 0.3.21 (Debian 12) picks its kernels by processor model number and falls back to its
// slowest set (Prescott, SSE3) on processors newer than itself, such as the Xeon (family 6,
// model 207) of our build machines, where sgemm then runs 3 to 5 times slower than its AVX-512
// kernels. It reads the choice once, when the library is loaded, from OPENBLAS_CORETYPE. So Accrue
// loads OpenBLAS itself: when OPENBLAS_CORETYPE is unset, it names the kernel set that matches the
// processor's instruction set (cpuid flags, not the model number) just for that load. A user's
// OPENBLAS_CORETYPE always wins, and a process that has already loaded OpenBLAS keeps its choice.
// OpenBLAS runs on one thread: Accrue splits GEMMs across its own pool (see parallel.hpp).

#include <string>

namespace accrue::kernels::cpu {

struct OpenBlas {
  using Sgemm = void (*)(int order, int trans_a, int trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                         const float* B, int ldb, float beta, float* C, int ldc);
  Sgemm sgemm = nullptr;
  /// The library file loaded.
  std::string library;
  /// openblas_get_corename(): the kernel set in use.
  std::string core;
  /// How the kernel set was chosen, for logs and the README's "what runs where".
  std::string how_chosen;
};

/// Loads OpenBLAS on first call; throws IoError naming the package when it is absent.
const OpenBlas& openblas();

/// The OPENBLAS_CORETYPE that matches the CPU kernels' capability(), or "" to let OpenBLAS decide.
std::string openblas_core_for_this_cpu();

}  // namespace accrue::kernels::cpu
