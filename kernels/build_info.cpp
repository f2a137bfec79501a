#include "build_info.hpp"

#include <fmt/format.h>

#include <accrue/config.hpp>
#include "../framework/core/device_query.hpp"
#include "gemm.hpp"

namespace accrue {

namespace {

std::string compiler() {
#if defined(__clang__)
  return fmt::format("Clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "an unknown compiler";
#endif
}

}  // namespace

BuildInfo build_info() {
  BuildInfo info;
  info.version = ACCRUE_VERSION;
  info.compiler = compiler();
  info.cpu_kernels = kernels::cpu::capability();
  info.cpu_supported = kernels::cpu::supported_capability();
  info.cpu_kernels_description = kernels::cpu::capability_description();
  info.cpu_bfloat16 = kernels::gemm_low_precision_engine(Device::cpu(), DType::bf16);
  info.cuda_backend = ACCRUE_WITH_CUDA != 0;
  const kernels::CudaDeviceQuery& devices = kernels::cuda_device_count();
  info.cuda_devices = devices.count > 0 ? fmt::format("{} device{}", devices.count, devices.count == 1 ? "" : "s")
                                        : devices.reason;
  info.mpi = ACCRUE_WITH_MPI != 0;
  info.nccl = ACCRUE_WITH_NCCL != 0;
  return info;
}

std::string BuildInfo::str() const {
  std::string s = fmt::format("Accrue {} ({})\n", version, compiler);
  s += fmt::format("  CPU kernels: {}\n", cpu_kernels_description);
  s += fmt::format("  bfloat16 products on the CPU: {}\n", cpu_bfloat16);
  s += fmt::format("  CUDA backend: {}\n", cuda_backend ? fmt::format("built; {}", cuda_devices) : "not built");
  s += fmt::format("  data-parallel backends: {}\n", mpi ? (nccl ? "MPI, NCCL" : "MPI") : "none (single process)");
  return s;
}

}  // namespace accrue
