#pragma once
// The `gpu` suite: every test here runs on cuda:0 and compares with the CPU backend. Without a
// device the program prints why and exits with 77, which ctest reports as skipped.

#include <accrue/framework/core/device_query.hpp>
#include <accrue/kernels/dispatch.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "../test_util.hpp"

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

/// The table of GPU_OP_CASEs: each case's name and the Ops it runs.
inline std::vector<std::pair<std::string, std::vector<kernels::Op>>>& op_cases() {
  static std::vector<std::pair<std::string, std::vector<kernels::Op>>> cases;
  return cases;
}
inline bool list_case(const char* name, std::vector<kernels::Op> ops) {
  op_cases().emplace_back(name, std::move(ops));
  return true;
}

/// Prints which cases run each Op; false when an Op the CPU backend supports in some dtype has none.
inline bool every_op_has_a_case() {
  bool complete = true;
  for (const kernels::Op op : kernels::all_ops()) {
    std::string cases;
    for (const auto& [name, ops] : op_cases())
      if (std::find(ops.begin(), ops.end(), op) != ops.end()) cases += (cases.empty() ? "" : ", ") + name;
    bool supported = false;
    for (const DType t : {DType::f32, DType::f16, DType::bf16, DType::i32})
      supported = supported || kernels::supports(op, Device::cpu(), t);
    if (supported && cases.empty()) complete = false;
    std::printf("%-18s %s\n", std::string(kernels::op_name(op)).c_str(),
                cases.empty() ? (supported ? "NO CASE" : "(not supported)") : cases.c_str());
  }
  return complete;
}

}  // namespace accrue::test

/// A case of the table: a test of `name` that runs the kernels' Ops listed after it on both devices.
#define GPU_OP_CASE(name, ...)                                                                 \
  static const bool name##_listed = ::accrue::test::list_case(#name, {__VA_ARGS__});          \
  BOOST_AUTO_TEST_CASE(name)

int main(int argc, char* argv[]) {
  if (argc == 2 && std::strcmp(argv[1], "--table") == 0) {
    if (accrue::test::every_op_has_a_case()) return 0;
    std::printf("every Op the CPU backend supports needs a GPU_OP_CASE that runs it\n");
    return 1;
  }
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
