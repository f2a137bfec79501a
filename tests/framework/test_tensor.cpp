#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(factories_fill_and_copy) {
  BOOST_TEST(Tensor::zeros({2, 3}).to_vector() == std::vector<float>(6, 0.0f), boost::test_tools::per_element());
  BOOST_TEST(Tensor::full({4}, 2.5f).to_vector() == std::vector<float>(4, 2.5f), boost::test_tools::per_element());
  const Tensor t = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  BOOST_TEST(t.shape().str() == "(2, 3)");
  BOOST_TEST(t.to_vector()[4] == 5.0f);
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{3, 1}, {2});
  BOOST_TEST(labels.dtype() == DType::i32);
  BOOST_TEST(labels.to_vector<std::int32_t>()[0] == 3);
  BOOST_TEST(Tensor::scalar(7.0f).item() == 7.0f);
  Tensor c = t.clone();
  c.fill_(0.0f);
  BOOST_TEST(t.to_vector()[0] == 1.0f);  // clone owns its data
}

BOOST_AUTO_TEST_CASE(views_share_storage) {
  Tensor t = Tensor::from({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor rows = t.narrow(1, 3);
  BOOST_TEST(rows.shape().str() == "(2, 2)");
  check_close(rows, {3, 4, 5, 6});
  Tensor flat = t.reshape({6});
  flat.fill_(9.0f);
  BOOST_TEST(t.to_vector()[0] == 9.0f);
  BOOST_CHECK_EXCEPTION(t.reshape({4}), ShapeError, message_has({"(3, 2)", "(4,)"}));
  BOOST_CHECK_EXCEPTION(t.narrow(2, 4), ValueError, message_has({"[2, 4)", "3 rows"}));
}

BOOST_AUTO_TEST_CASE(misuse_is_reported) {
  BOOST_CHECK_EXCEPTION(Tensor().shape(), ValueError, message_has({"undefined tensor"}));
  const Tensor t = Tensor::zeros({2});
  BOOST_CHECK_EXCEPTION(t.data<std::int32_t>(), ValueError, message_has({"float32", "int32"}));
  BOOST_CHECK_EXCEPTION(t.item(), ValueError, message_has({"one-element", "(2,)"}));
  BOOST_CHECK_EXCEPTION(Tensor::from({1, 2, 3}, {2, 2}), ShapeError, message_has({"3 values", "(2, 2)"}));
  BOOST_CHECK_EXCEPTION(Tensor::zeros({2}, {.dtype = DType::i32}).set_requires_grad(), ValueError,
                        message_has({"int32", "cannot require grad"}));
}

BOOST_AUTO_TEST_CASE(seeded_random_repeats) {
  Generator a{42}, b{42}, c{43};
  const auto x = Tensor::uniform({1000}, -1, 1, &a).to_vector();
  const auto y = Tensor::uniform({1000}, -1, 1, &b).to_vector();
  const auto z = Tensor::uniform({1000}, -1, 1, &c).to_vector();
  BOOST_TEST(x == y, boost::test_tools::per_element());
  BOOST_TEST(x != z);
  double mean = 0;
  for (float v : x) {
    BOOST_TEST((v >= -1.0f && v < 1.0f));
    mean += v;
  }
  BOOST_TEST(std::abs(mean / 1000) < 0.1);
}

BOOST_AUTO_TEST_CASE(string_form) {
  const std::string s = Tensor::from({1, 2}, {2}).str();
  BOOST_TEST(s.find("shape=(2,)") != std::string::npos);
  BOOST_TEST(s.find("float32") != std::string::npos);
}
