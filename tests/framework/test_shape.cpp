#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(shape_basics) {
  const Shape s{64, 1, 28, 28};
  BOOST_TEST(s.rank() == 4);
  BOOST_TEST(s.numel() == 64 * 784);
  BOOST_TEST(s[-1] == 28);
  BOOST_TEST(s.str() == "(64, 1, 28, 28)");
  BOOST_TEST(Shape{10}.str() == "(10,)");
  BOOST_TEST(Shape{}.numel() == 1);
  BOOST_TEST(s.drop_front().str() == "(1, 28, 28)");
  BOOST_TEST(s.drop_front().prepend(32).str() == "(32, 1, 28, 28)");
  BOOST_TEST((Shape{2, 3} == Shape{2, 3}));
  BOOST_TEST(!(Shape{2, 3} == Shape{3, 2}));
}

BOOST_AUTO_TEST_CASE(shape_errors_name_the_problem) {
  BOOST_CHECK_EXCEPTION((Shape{2, -1}), ValueError, message_has({"dimension 1", "negative"}));
  BOOST_CHECK_EXCEPTION((Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}), ValueError, message_has({"at most 8"}));
  const Shape s{2, 3};
  BOOST_CHECK_EXCEPTION(s[2], ValueError, message_has({"index 2", "(2, 3)"}));
  BOOST_CHECK_EXCEPTION(s[-3], ValueError, message_has({"index -3"}));
}
