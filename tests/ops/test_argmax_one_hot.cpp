// argmax and one_hot (framework/ops/argmax_one_hot.cpp), the ops without a gradient: values, and
// the errors that name what is wrong.

#include "op_test.hpp"

BOOST_AUTO_TEST_SUITE(argmax_one_hot)

BOOST_AUTO_TEST_CASE(argmax_takes_each_rows_first_largest) {
  const Tensor scores = Tensor::from({0.1f, 2.0f, -1.0f, 5.0f, 5.0f, 4.0f, -3.0f, -2.0f, -2.5f}, {3, 3});
  const Tensor rows = ops::argmax(scores);
  BOOST_TEST(rows.dtype() == DType::i32);
  BOOST_TEST(rows.to_vector<std::int32_t>() == (std::vector<std::int32_t>{1, 0, 1}), boost::test_tools::per_element());
  BOOST_CHECK_EXCEPTION(ops::argmax(Tensor::zeros({4})), ShapeError, accrue::test::message_has({"(rows, classes)"}));
}

BOOST_AUTO_TEST_CASE(one_hot_rows_and_labels_out_of_range) {
  const std::vector<std::int32_t> labels{2, 0, 1};
  const Tensor rows = ops::one_hot(Tensor::from(labels, {3}), 3);
  BOOST_TEST(rows.shape() == (Shape{3, 3}));
  BOOST_TEST(rows.to_vector<float>() == (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0}), boost::test_tools::per_element());
  const std::vector<std::int32_t> bad{0, 3};
  BOOST_CHECK_EXCEPTION(ops::one_hot(Tensor::from(bad, {2}), 3), Error,
                        accrue::test::message_has({"label 3 at index 1 is outside [0, 3)"}));
}

BOOST_AUTO_TEST_SUITE_END()
