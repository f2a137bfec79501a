// What needs no device: the CUDA seam's errors, and which backend each tensor runs on.

#include "test_util.hpp"

using namespace accrue;
using accrue::test::message_has;

BOOST_AUTO_TEST_CASE(asking_for_a_missing_gpu_is_a_clear_error) {
  if (Device::cuda_device_count() > 0) {
    BOOST_TEST_MESSAGE("a CUDA device is present; the missing-GPU error cannot be provoked here");
    return;
  }
  BOOST_CHECK_EXCEPTION(Device::cuda(0), DeviceError, message_has({"cuda:0"}));
  BOOST_TEST(Device::best() == Device::cpu());
}

BOOST_AUTO_TEST_CASE(device_names) {
  BOOST_TEST(Device::cpu().str() == "cpu");
  BOOST_TEST(Tensor::zeros({1}).device() == Device::cpu());
}

BOOST_AUTO_TEST_CASE(build_reports_its_backends) {
  BOOST_TEST_MESSAGE("ACCRUE_WITH_CUDA=" << ACCRUE_WITH_CUDA);
  BOOST_TEST((ACCRUE_WITH_CUDA == 0 || ACCRUE_WITH_CUDA == 1));
}
