// Attention (framework/ops/attention.cpp): fused scaled dot-product attention against its
// definition, with gradients.

#include "op_test.hpp"
namespace {

// Attention written out of ops for comparison: (B, H, T, d) operands.
Tensor attention_written_out(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, const Tensor& mask,
                             float scale) {
  const Tensor p = ops::masked_softmax(ops::bmm(q, k, {.transpose_b = true}), {.scale = scale, .causal = causal, .mask = mask});
  return ops::bmm(p, v);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(attention)

BOOST_AUTO_TEST_CASE(scaled_dot_product_attention_gradients_and_values) {
  // 2 items, 3 heads, 4 queries, 5 keys (one key before the queries), widths 3 and 2.
  const Tensor q = random_tensor({2, 3, 4, 3}, 300, -1, 1), k = random_tensor({2, 3, 5, 3}, 301, -1, 1);
  const Tensor v = random_tensor({2, 3, 5, 2}, 302, -1, 1);
  std::vector<float> m(20, 0.0f);
  m[2] = m[9] = -INFINITY;
  m[13] = -0.75f;
  const Tensor mask = Tensor::from(m, {4, 5});
  const Tensor padding = Tensor::from(std::vector<std::int32_t>{0, 0, 0, 0, 1, 0, 1, 0, 0, 0}, {2, 5});
  for (const bool causal : {false, true})
    for (const bool masked : {false, true})
      for (const bool padded : {false, true}) {
        const ops::AttentionOptions options{.causal = causal, .mask = masked ? mask : Tensor(),
                                            .key_padding = padded ? padding : Tensor()};
        expect_gradients(fmt::format("attention causal={} mask={} padding={}", causal, masked, padded),
                         [&](const auto& in) { return ops::scaled_dot_product_attention(in[0], in[1], in[2], options); },
                         {leaf(q.clone()), leaf(k.clone()), leaf(v.clone())});
      }
  // Values against bmm, masked_softmax and bmm.
  const float scale = 1.0f / std::sqrt(3.0f);
  const std::vector<float> fused = ops::scaled_dot_product_attention(q, k, v, {.causal = true, .mask = mask}).to_vector();
  const std::vector<float> written = attention_written_out(q, k, v, true, mask, scale).to_vector();
  BOOST_REQUIRE_EQUAL(fused.size(), written.size());
  for (std::size_t i = 0; i < fused.size(); ++i) BOOST_TEST(std::abs(fused[i] - written[i]) < 1e-6);
  // Token-major operands (B, T, H, d) give the same as head-major ones, permuted.
  const Tensor tq = ops::transpose(q, 1, 2), tk = ops::transpose(k, 1, 2), tv = ops::transpose(v, 1, 2);
  const std::vector<float> token_major = ops::transpose(
      ops::scaled_dot_product_attention(tq, tk, tv, {.causal = true, .mask = mask, .token_major = true}), 1, 2).to_vector();
  for (std::size_t i = 0; i < fused.size(); ++i) BOOST_TEST(std::abs(fused[i] - token_major[i]) < 1e-6);
  expect_gradients("attention token-major causal",
                   [&](const auto& in) {
                     return ops::scaled_dot_product_attention(in[0], in[1], in[2],
                                                              {.causal = true, .key_padding = padding, .token_major = true});
                   },
                   {leaf(tq.clone()), leaf(tk.clone()), leaf(tv.clone())});
  // Dropout: the mask regenerated from one generator state, so the check sees one function.
  expect_gradients("attention dropout",
                   [&](const auto& in) {
                     Generator generator{11};
                     return ops::scaled_dot_product_attention(in[0], in[1], in[2],
                                                              {.dropout = 0.3f, .generator = &generator});
                   },
                   {leaf(q.clone()), leaf(k.clone()), leaf(v.clone())});
  // About the dropped share of the probabilities is dropped: with values of ones, each output is
  // the kept probability mass scaled by 1 / (1 - p), 1 on average.
  Generator generator{12};
  const Tensor ones = Tensor::full({4, 2, 64, 1}, 1.0f);
  const std::vector<float> kept = ops::scaled_dot_product_attention(random_tensor({4, 2, 64, 8}, 304),
                                                                    random_tensor({4, 2, 64, 8}, 305), ones,
                                                                    {.dropout = 0.5f, .generator = &generator})
                                      .to_vector();
  double mean = 0;
  for (float x : kept) mean += x / static_cast<double>(kept.size());
  BOOST_TEST(std::abs(mean - 1.0) < 0.05);
  BOOST_TEST(std::any_of(kept.begin(), kept.end(), [](float x) { return std::abs(x - 1.0f) > 0.1f; }));
  BOOST_CHECK_THROW(ops::scaled_dot_product_attention(q, k, random_tensor({2, 3, 4, 2}, 303)), ShapeError);
  BOOST_CHECK_THROW(ops::scaled_dot_product_attention(q, k, v, {.mask = Tensor::zeros({5, 4})}), ShapeError);
}

BOOST_AUTO_TEST_SUITE_END()
