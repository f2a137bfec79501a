#pragma once
// The `gpu` suite: every test here runs on cuda:0 and compares with the CPU backend. Without a
// device the program prints why and exits with 77, which ctest reports as skipped.

#include <accrue/kernels/device_query.hpp>
#include <cstdio>
#include <cstring>

#include "test_util.hpp"

namespace accrue::test {

inline Device gpu() { return Device::cuda(0); }

/// `t` on the GPU, leaf-ness and requires_grad as on the CPU.
inline Tensor on_gpu(const Tensor& t) {
  Tensor g = t.detach().to(gpu());
  if (t.requires_grad()) g.set_requires_grad(true);
  return g;
}

/// Compares a GPU result with the CPU's, moving it back first.
inline void check_gpu_close(const Tensor& got_on_gpu, const Tensor& cpu, double atol, double rtol,
                            const std::string& what) {
  BOOST_REQUIRE_MESSAGE(got_on_gpu.device().is_cuda(), what << ": the result is on " << got_on_gpu.device().str()
                                                            << ", not the GPU");
  check_close(got_on_gpu.to(Device::cpu()), cpu, atol, rtol, what);
}

}  // namespace accrue::test

int main(int argc, char* argv[]) {
  const int devices = accrue::Device::cuda_device_count();
  if (devices == 0) {
    const auto& query = accrue::kernels::cuda_device_count();
    const char* name = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
    std::printf("SKIPPED: %s needs a CUDA device: %s\n", name != nullptr ? name + 1 : "this test",
                query.reason.c_str());
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
