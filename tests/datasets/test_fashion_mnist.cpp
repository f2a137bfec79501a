// The real FashionMNIST files from Debian's dataset-fashion-mnist (installed by the README's test
// command). Skipped, with the reason, where they are absent.

#include "../test_util.hpp"

using namespace accrue;

BOOST_AUTO_TEST_CASE(fashion_mnist_loads_as_torchvision_gives_it,
                     *boost::unit_test::precondition(accrue::test::requires_fashion_mnist)) {
  const auto [train, test] = datasets::fashion_mnist();
  BOOST_TEST(train.inputs().shape().str() == "(60000, 1, 28, 28)");
  BOOST_TEST(test.inputs().shape().str() == "(10000, 1, 28, 28)");
  BOOST_TEST(train.targets().dtype() == DType::i32);
  BOOST_TEST(train.inputs().category() == MemoryCategory::data);
  const auto x = test.inputs().to_vector();
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  BOOST_TEST(*lo == 0.0f);
  BOOST_TEST(*hi == 1.0f);
  std::vector<int> counts(10, 0);
  for (auto y : train.targets().to_vector<std::int32_t>()) ++counts.at(static_cast<std::size_t>(y));
  for (int c : counts) BOOST_TEST(c == 6000);  // FashionMNIST is balanced
  BOOST_TEST(std::string(datasets::fashion_mnist_class_name(9)) == "Ankle boot");
}
