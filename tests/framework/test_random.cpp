#include "../test_util.hpp"

#include <accrue/framework/core/philox.hpp>

using namespace accrue;

// Known-answer test of Philox4x32-10 from the Random123 distribution (kat_vectors): key 0,
// counter 0.
BOOST_AUTO_TEST_CASE(philox_known_answer) {
  const auto r = kernels::common::philox4x32_10(0, 0);
  BOOST_TEST(r.v[0] == 0x6627e8d5u);
  BOOST_TEST(r.v[1] == 0xe169c58du);
  BOOST_TEST(r.v[2] == 0xbc57ac4cu);
  BOOST_TEST(r.v[3] == 0x9b00dbd8u);
}

BOOST_AUTO_TEST_CASE(normal_has_the_right_moments) {
  Generator gen{7};
  const auto v = Tensor::normal({100000}, 2.0f, 3.0f, &gen).to_vector();
  double mean = 0, var = 0;
  for (float x : v) mean += x;
  mean /= v.size();
  for (float x : v) var += (x - mean) * (x - mean);
  var /= v.size();
  BOOST_TEST(std::abs(mean - 2.0) < 0.05);
  BOOST_TEST(std::abs(std::sqrt(var) - 3.0) < 0.05);
}

BOOST_AUTO_TEST_CASE(below_is_uniform_and_in_range) {
  Generator gen{1};
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100000; ++i) {
    const auto k = gen.below(10);
    BOOST_REQUIRE(k < 10);
    ++counts[k];
  }
  for (int c : counts) BOOST_TEST(std::abs(c - 10000) < 500);
}

BOOST_AUTO_TEST_CASE(state_round_trip) {
  Generator a{5};
  a.reserve(100);
  Generator b;
  b.set_state(a.seed(), a.offset());
  BOOST_TEST(a.next_u32() == b.next_u32());
  manual_seed(3);
  const float first = Tensor::uniform({1}, 0, 1).item();
  manual_seed(3);
  BOOST_TEST(Tensor::uniform({1}, 0, 1).item() == first);
}
