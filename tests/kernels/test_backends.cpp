// What needs no device: the CUDA seam's errors, and which backend each tensor runs on.

#include <accrue/kernels/dispatch.hpp>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(asking_for_a_missing_gpu_is_a_clear_error) {
  if (Device::cuda_device_count() > 0) {
    BOOST_TEST_MESSAGE("a CUDA device is present; the missing-GPU error cannot be provoked here");
    return;
  }
  // The reason says which: no backend in this build, or what the CUDA runtime answered.
  BOOST_CHECK_EXCEPTION(Device::cuda(0), DeviceError,
                        message_has({"cuda:0", ACCRUE_WITH_CUDA ? "cudaGetDeviceCount failed" : "no CUDA backend"}));
  BOOST_CHECK_EXCEPTION(Device::cuda(3), DeviceError, message_has({"cuda:3"}));
  BOOST_TEST(Device::cuda_device_count() == 0);

  // best() falls back to the CPU with one log line per process, however often it is asked.
  std::vector<std::string> lines;
  log::set_sink([&](log::Level, std::string_view line) { lines.emplace_back(line); });
  BOOST_TEST(Device::best() == Device::cpu());
  BOOST_TEST(Device::best() == Device::cpu());
  log::set_sink(nullptr);
  BOOST_TEST(lines.size() <= 1u);
  for (const auto& l : lines) BOOST_TEST(l.find("training on the CPU") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_gpu_cannot_be_reached_without_asking_for_one) {
  // Every way to a CUDA tensor or model goes through Device::cuda(), so without a GPU nothing
  // half-moves: the model stays whole on the CPU.
  if (Device::cuda_device_count() > 0) return;
  Sequential model{layers::Input{4}, layers::Dense{3}};
  const auto before = model.parameters().front().to_vector();
  BOOST_CHECK_THROW(model.to(Device::cuda()), DeviceError);
  BOOST_TEST(model.device() == Device::cpu());
  BOOST_TEST(model.parameters().front().to_vector() == before);
  BOOST_CHECK_THROW(Tensor::zeros({2}).to(Device::cuda()), DeviceError);
}

BOOST_AUTO_TEST_CASE(devices_parse_from_command_lines) {
  BOOST_TEST(Device::parse("cpu") == Device::cpu());
  BOOST_TEST((Device::parse("best") == Device::best()));
  BOOST_TEST((Device::parse("auto") == Device::best()));
  BOOST_CHECK_EXCEPTION(Device::parse("gpu"), ValueError, message_has({"'gpu'", "cpu, cuda, cuda:N or best"}));
  BOOST_CHECK_EXCEPTION(Device::parse("cuda:x"), ValueError, message_has({"'cuda:x'"}));
  if (Device::cuda_device_count() == 0) {
    BOOST_CHECK_EXCEPTION(Device::parse("cuda"), DeviceError, message_has({"cuda:0"}));
    BOOST_CHECK_EXCEPTION(Device::parse("cuda:2"), DeviceError, message_has({"cuda:2"}));
  } else {
    BOOST_TEST(Device::parse("cuda:0").is_cuda());
  }
}

BOOST_AUTO_TEST_CASE(device_names) {
  BOOST_TEST(Device::cpu().str() == "cpu");
  BOOST_TEST(Tensor::zeros({1}).device() == Device::cpu());
}

BOOST_AUTO_TEST_CASE(build_reports_its_backends) {
  BOOST_TEST_MESSAGE("ACCRUE_WITH_CUDA=" << ACCRUE_WITH_CUDA);
  BOOST_TEST((ACCRUE_WITH_CUDA == 0 || ACCRUE_WITH_CUDA == 1));
}

BOOST_AUTO_TEST_CASE(the_support_table_answers_without_a_device) {
  using kernels::Op;
  using kernels::supports;
  BOOST_TEST(supports(Op::conv2d, Device::cpu(), DType::f32));
  BOOST_TEST(!supports(Op::conv2d, Device::cpu(), DType::f16));
  BOOST_TEST(supports(Op::gemm, DeviceKind::cpu, DType::bf16));
  BOOST_TEST(supports(Op::copy, DeviceKind::cpu, DType::i32));
  BOOST_TEST(!supports(Op::softmax, DeviceKind::cpu, DType::i32));
  // The backends mirror each other: a build with the CUDA backend runs on a GPU what it runs on the
  // CPU, and a build without runs nothing there. The exception: bfloat16 convolution and pooling
  // run on the CPU only (on a GPU the ops compute them in float32).
  const auto cpu_only = [](Op op, DType t) { return t == DType::bf16 && (op == Op::conv2d || op == Op::pool2d); };
  for (const Op op : kernels::all_ops())
    for (const DType t : {DType::f32, DType::f16, DType::bf16, DType::i32})
      BOOST_TEST(supports(op, DeviceKind::cuda, t) ==
                     (ACCRUE_WITH_CUDA && supports(op, DeviceKind::cpu, t) && !cpu_only(op, t)),
                 kernels::op_name(op) << " in " << dtype_name(t));
  BOOST_TEST(supports(Op::conv2d, DeviceKind::cpu, DType::bf16));
  BOOST_TEST(!supports(Op::conv2d, DeviceKind::cuda, DType::bf16));
  BOOST_TEST(kernels::all_ops().size() == 36u);
  BOOST_TEST(kernels::op_name(Op::lamb_moments) == "lamb_moments");
  BOOST_TEST(kernels::op_name(Op::permute) == "permute");
  BOOST_TEST(kernels::op_name(Op::unscale_and_check) == "unscale_and_check");
  BOOST_CHECK_EXCEPTION(kernels::unsupported(Op::conv2d, Device::cpu(), DType::f16), NotSupported,
                        message_has({"conv2d", "float16", "cpu"}));
}
