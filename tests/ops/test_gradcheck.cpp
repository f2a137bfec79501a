// The finite-difference check every op's test relies on (framework/ops/gradcheck.cpp) fails a wrong
// gradient.

#include "op_test.hpp"
BOOST_AUTO_TEST_SUITE(gradient_check)

BOOST_AUTO_TEST_CASE(gradcheck_catches_a_wrong_gradient) {
  // A deliberately wrong "gradient": detach() hides part of the function from autograd.
  const GradcheckResult r =
      gradcheck([](const auto& in) { return in[0] * in[0].detach(); }, {leaf(random_tensor({5}, 94, 0.5f, 1))});
  BOOST_TEST(!r.ok);
  BOOST_TEST(r.report.find("input 0") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
