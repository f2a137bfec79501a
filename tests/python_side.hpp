#pragma once
// The PyTorch side of the tests that run it as they go (test_interop, test_resnet): a script of
// tests/data run by Debian's Python, and a main that reports the test skipped (exit 77, with the
// reason) where that Python cannot import what the script needs.

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace accrue::test {

inline const std::string python = "/usr/bin/python3";

/// Runs tests/data/<script> with `args` and returns what it printed; the test fails with that
/// output when the script does not exit with 0.
inline std::string run_python_script(const std::string& script, const std::string& args) {
  const std::string cmd = python + " " + ACCRUE_TEST_DATA_DIR + "/" + script + " " + args + " 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  BOOST_REQUIRE(p != nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  BOOST_REQUIRE_MESSAGE(pclose(p) == 0, script << " " << args << " failed:\n" << out);
  return out;
}

/// The test program's main: Boost.Test's, or exit 77 saying why when `python` cannot import
/// `modules` ("torch, torchvision"), which come from Debian's packages `packages`.
inline int main_with_python(int argc, char* argv[], const char* test, const std::string& modules, const char* packages) {
  if (std::system((python + " -c 'import " + modules + "' >/dev/null 2>&1").c_str()) != 0) {
    std::printf("SKIPPED: %s needs PyTorch on the Python side: %s cannot import %s (Debian's %s)\n", test, python.c_str(),
                modules.c_str(), packages);
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}

}  // namespace accrue::test
