// Softmax (framework/ops/softmax.cpp): softmax and log_softmax, and attention's masked softmax.

#include "op_test.hpp"
BOOST_AUTO_TEST_SUITE(softmax)

BOOST_AUTO_TEST_CASE(softmax_family) {
  const Tensor x = random_tensor({3, 4, 5}, 80, -2, 2);
  for (int dim : {0, 1, -1}) {
    expect_gradients("softmax dim " + std::to_string(dim), [=](const auto& in) { return ops::softmax(in[0], dim); },
                     {leaf(x.clone())});
    expect_gradients("log_softmax dim " + std::to_string(dim),
                     [=](const auto& in) { return ops::log_softmax(in[0], dim); }, {leaf(x.clone())});
  }
}

BOOST_AUTO_TEST_CASE(masked_softmax_scaled_causal_and_masked) {
  const Tensor x = random_tensor({2, 3, 5}, 100, -2, 2);  // 3 queries, 5 keys: 2 keys come before the queries
  std::vector<float> m(15, 0.0f);
  m[1] = m[7] = -INFINITY;  // query 0 ignores key 1, query 1 key 2
  m[12] = -1.5f;
  const Tensor mask = Tensor::from(m, {3, 5});
  for (const bool causal : {false, true})
    for (const bool masked : {false, true})
      expect_gradients(fmt::format("masked_softmax causal={} mask={}", causal, masked),
                       [&](const auto& in) {
                         return ops::masked_softmax(in[0], {.scale = 0.7f, .causal = causal, .mask = masked ? mask : Tensor()});
                       },
                       {leaf(x.clone())});
  // Against softmax of the scaled, masked scores written out: -inf where the causal rule or the
  // mask drops an entry.
  const Tensor y = ops::masked_softmax(x, {.scale = 0.7f, .causal = true, .mask = mask});
  std::vector<float> written = x.to_vector();
  for (std::size_t i = 0; i < written.size(); ++i) {
    const std::size_t q = (i / 5) % 3, k = i % 5;
    written[i] = k > q + 2 ? -INFINITY : 0.7f * written[i] + m[q * 5 + k];
  }
  const std::vector<float> expected = ops::softmax(Tensor::from(written, {2, 3, 5})).to_vector(), got = y.to_vector();
  for (std::size_t i = 0; i < got.size(); ++i) BOOST_TEST(std::abs(got[i] - expected[i]) < 1e-6);
  // A query that keeps no key: zeros, not NaN.
  const Tensor none = Tensor::full({1, 2}, -INFINITY);
  BOOST_TEST(ops::masked_softmax(random_tensor({1, 2}, 3), {.mask = none}).to_vector() == std::vector<float>({0, 0}),
             boost::test_tools::per_element());
  BOOST_CHECK_THROW(ops::masked_softmax(x, {.mask = Tensor::zeros({5, 3})}), ShapeError);
}

BOOST_AUTO_TEST_SUITE_END()
