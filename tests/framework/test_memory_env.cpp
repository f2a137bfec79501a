// ACCRUE_MEMORY_LIMIT caps a device from the process's first allocation on. ctest runs this with
// ACCRUE_MEMORY_LIMIT=cpu=64MiB (tests/CMakeLists.txt).

#include <cstdlib>

#include "../test_util.hpp"

using namespace accrue;

BOOST_AUTO_TEST_CASE(the_variable_caps_the_cpu_from_the_start) {
  const char* env = std::getenv("ACCRUE_MEMORY_LIMIT");
  BOOST_REQUIRE_MESSAGE(env != nullptr, "run through ctest, which sets ACCRUE_MEMORY_LIMIT=cpu=64MiB");
  BOOST_TEST(memory_stats().limit == 64u << 20);
  const Tensor small = Tensor::zeros({1 << 20});  // 4 MiB fits
  BOOST_CHECK_EXCEPTION(Tensor::zeros({20 << 20}), OutOfMemory, test::message_has({"limit of 64.00 MiB", "80.00 MiB"}));
  // In code, the limit can be changed or lifted.
  set_memory_limit(Device::cpu(), 0);
  BOOST_CHECK_NO_THROW(Tensor::zeros({20 << 20}));
}
