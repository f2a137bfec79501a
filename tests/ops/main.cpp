// The program test_ops: every tests/ops/test_<op>.cpp, one test suite per op.
#define BOOST_TEST_MODULE test_ops
#include <boost/test/unit_test.hpp>
