// Finite-difference checks of every differentiable op (central differences, float32).

#include "test_util.hpp"

using namespace accrue;
using accrue::test::away_from_zero;
using accrue::test::leaf;
using accrue::test::random_tensor;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

void expect_gradients(const std::string& name, const Fn& f, const std::vector<Tensor>& inputs,
                      GradcheckOptions options = {}) {
  const GradcheckResult r = gradcheck(f, inputs, options);
  BOOST_CHECK_MESSAGE(r.ok, name << ": gradients differ from finite differences (max error " << r.max_abs_error << ")\n"
                                 << r.report);
}

void expect_unary(const std::string& name, Tensor (*op)(const Tensor&), Tensor input) {
  expect_gradients(name, [op](const std::vector<Tensor>& in) { return op(in[0]); }, {leaf(std::move(input))});
}

}  // namespace

BOOST_AUTO_TEST_CASE(unary_ops) {
  const Shape s{3, 7};
  expect_unary("relu", ops::relu, away_from_zero(s, 1, 0.05f));
  expect_unary("sigmoid", ops::sigmoid, random_tensor(s, 2, -3, 3));
  expect_unary("tanh", ops::tanh, random_tensor(s, 3, -2, 2));
  expect_unary("exp", ops::exp, random_tensor(s, 4, -1, 1));
  expect_unary("log", ops::log, random_tensor(s, 5, 0.5f, 3));
  expect_unary("neg", ops::neg, random_tensor(s, 6));
  expect_unary("square", ops::square, random_tensor(s, 7));
  expect_unary("sqrt", ops::sqrt, random_tensor(s, 8, 0.5f, 3));
  expect_unary("abs", ops::abs, away_from_zero(s, 9, 0.05f));
  expect_gradients("gelu", [](const auto& in) { return ops::gelu(in[0]); }, {leaf(random_tensor(s, 10, -3, 3))});
  expect_gradients("gelu_tanh", [](const auto& in) { return ops::gelu(in[0], true); }, {leaf(random_tensor(s, 11, -3, 3))});
  expect_gradients("pow", [](const auto& in) { return ops::pow(in[0], 2.5f); }, {leaf(random_tensor(s, 12, 0.5f, 2))});
  expect_gradients("affine", [](const auto& in) { return ops::affine(in[0], -1.5f, 0.25f); }, {leaf(random_tensor(s, 13))});
  expect_gradients("scalar operators", [](const auto& in) { return (2.0f - in[0]) * 3.0f / 4.0f + 1.0f; },
                   {leaf(random_tensor(s, 14))});
}

BOOST_AUTO_TEST_CASE(binary_ops_with_broadcasting) {
  using Op = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<std::string, Op>> binary = {
      {"add", ops::add}, {"sub", ops::sub}, {"mul", ops::mul}, {"div", ops::div}};
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{4, 1}, {1, 5}}, {{2, 3, 4}, {3, 1}}, {{5}, {4, 5}}, {{}, {3, 2}}};
  std::uint64_t seed = 20;
  for (const auto& [name, op] : binary) {
    for (const auto& [sa, sb] : shapes) {
      Tensor a = leaf(random_tensor(sa, ++seed, 0.5f, 2.0f));  // positive, so div is smooth
      Tensor b = leaf(random_tensor(sb, ++seed, 0.5f, 2.0f));
      expect_gradients(name + " " + sa.str() + " " + sb.str(), [op](const auto& in) { return op(in[0], in[1]); },
                       {a, b});
    }
  }
}

BOOST_AUTO_TEST_CASE(reductions) {
  const Tensor x = random_tensor({3, 4, 5}, 40);
  expect_gradients("sum", [](const auto& in) { return ops::sum(in[0]); }, {leaf(x.clone())});
  expect_gradients("mean", [](const auto& in) { return ops::mean(in[0]); }, {leaf(x.clone())});
  for (int dim : {0, 1, 2, -1}) {
    for (bool keep : {false, true}) {
      expect_gradients("sum dim " + std::to_string(dim), [=](const auto& in) { return ops::sum(in[0], dim, keep); },
                       {leaf(x.clone())});
      expect_gradients("mean dim " + std::to_string(dim), [=](const auto& in) { return ops::mean(in[0], dim, keep); },
                       {leaf(x.clone())});
    }
  }
}

BOOST_AUTO_TEST_CASE(matrix_products) {
  expect_gradients("matmul", [](const auto& in) { return ops::matmul(in[0], in[1]); },
                   {leaf(random_tensor({5, 7}, 50)), leaf(random_tensor({7, 3}, 51))});
  expect_gradients("linear", [](const auto& in) { return ops::linear(in[0], in[1], in[2]); },
                   {leaf(random_tensor({6, 8}, 52)), leaf(random_tensor({4, 8}, 53)), leaf(random_tensor({4}, 54))});
  expect_gradients("linear without bias", [](const auto& in) { return ops::linear(in[0], in[1], Tensor()); },
                   {leaf(random_tensor({6, 8}, 55)), leaf(random_tensor({4, 8}, 56))});
  expect_gradients("linear on 3-D input", [](const auto& in) { return ops::linear(in[0], in[1], in[2]); },
                   {leaf(random_tensor({2, 3, 8}, 57)), leaf(random_tensor({4, 8}, 58)), leaf(random_tensor({4}, 59))});
  // Large enough to take the multi-threaded GEMM path.
  expect_gradients("linear, threaded GEMM", [](const auto& in) { return ops::linear(in[0], in[1], in[2]); },
                   {leaf(random_tensor({64, 96}, 60)), leaf(random_tensor({80, 96}, 61)), leaf(random_tensor({80}, 62))},
                   {.max_elements = 64});
}

BOOST_AUTO_TEST_CASE(slice_split_and_cat) {
  const Tensor x = random_tensor({3, 5, 4}, 90);
  for (const int d : {0, 1, 2, -1})
    expect_gradients(fmt::format("slice along {}", d), [d](const auto& in) { return ops::slice(in[0], d, 1, 3) * 2.0f; },
                     {leaf(x.clone())});
  expect_gradients("split into three, used unevenly", [](const auto& in) {
    const std::vector<std::int64_t> sizes = {1, 3, 1};
    const std::vector<Tensor> p = ops::split(in[0], sizes, 1);
    return ops::add(ops::mul(p[0], p[2]), ops::sum(p[1], 1, true));
  }, {leaf(x.clone())});
  expect_gradients("cat along the middle", [](const auto& in) {
    const std::vector<Tensor> parts = {in[0], in[1], in[0]};
    return ops::cat(parts, 1) * 2.0f;
  }, {leaf(random_tensor({3, 2, 4}, 91)), leaf(random_tensor({3, 5, 4}, 92))});

  // Values: cat undoes split, along every dimension, for int32 too.
  for (const int d : {0, 1, 2}) {
    const std::vector<std::int64_t> sizes = {1, x.size(d) - 1};
    const std::vector<Tensor> pieces = ops::split(x, sizes, d);
    BOOST_TEST(ops::cat(pieces, d).to_vector() == x.to_vector(), boost::test_tools::per_element());
  }
  const Tensor ints = Tensor::from(std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  const std::vector<Tensor> both = {ints, ints};
  BOOST_TEST(ops::cat(both, 1).to_vector<std::int32_t>() == std::vector<std::int32_t>({1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}),
             boost::test_tools::per_element());
  BOOST_TEST(ops::slice(ints, 1, 1, 3).to_vector<std::int32_t>() == std::vector<std::int32_t>({2, 3, 5, 6}),
             boost::test_tools::per_element());
  const std::vector<Tensor> mismatched = {x, random_tensor({3, 5, 2}, 1)};
  BOOST_CHECK_EXCEPTION(ops::cat(mismatched, 1), ShapeError, test::message_has({"tensor 1", "dimension 1"}));
  BOOST_CHECK_THROW(ops::slice(x, 1, 2, 6), ShapeError);
  const std::vector<std::int64_t> wrong = {2, 2};
  BOOST_CHECK_THROW(ops::split(x, wrong, 1), ShapeError);
}

BOOST_AUTO_TEST_CASE(embedding_rows_and_their_gradient) {
  // Repeated indices add up; the padding row gets nothing.
  const Tensor indices = Tensor::from(std::vector<std::int32_t>{3, 0, 3, 4, 1, 3}, {2, 3});
  expect_gradients("embedding", [indices](const auto& in) { return ops::embedding(in[0], indices) * 2.0f; },
                   {leaf(random_tensor({5, 4}, 80))});
  const Tensor w = leaf(random_tensor({5, 4}, 81));
  const Tensor y = ops::embedding(w, indices, /*padding_idx=*/3);
  BOOST_TEST(y.shape() == Shape({2, 3, 4}));
  const std::vector<float> wv = w.to_vector(), yv = y.to_vector();
  const std::vector<int> at = {3, 0, 3, 4, 1, 3};
  for (std::size_t i = 0; i < at.size(); ++i)
    for (std::size_t d = 0; d < 4; ++d) BOOST_TEST(yv[i * 4 + d] == wv[static_cast<std::size_t>(at[i]) * 4 + d]);
  ops::sum(y).backward();
  const std::vector<float> g = w.grad().to_vector();
  const std::vector<float> rows = {1, 1, 0, 0, 1};  // row 3 is padding, row 2 unused
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t d = 0; d < 4; ++d) BOOST_TEST(g[r * 4 + d] == rows[r]);
  BOOST_CHECK_EXCEPTION(ops::embedding(w, Tensor::from(std::vector<std::int32_t>{1, 7}, {2})), ValueError,
                        test::message_has({"index 7 at position 1", "[0, 5)"}));
  BOOST_CHECK_EXCEPTION(ops::embedding(w, Tensor::from(std::vector<std::int32_t>{-1}, {1})), ValueError,
                        test::message_has({"index -1 at position 0"}));
  BOOST_CHECK_THROW(ops::embedding(w, random_tensor({2}, 1)), ValueError);  // float indices
}

BOOST_AUTO_TEST_CASE(batched_matrix_products) {
  // (2, 3) matrices of each shape; every reading of the operands, transposed or not.
  std::uint64_t seed = 63;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      const Shape sa = ta ? Shape{2, 3, 4, 5} : Shape{2, 3, 5, 4}, sb = tb ? Shape{2, 3, 6, 4} : Shape{2, 3, 4, 6};
      expect_gradients(fmt::format("bmm transpose_a={} transpose_b={}", ta, tb),
                       [ta, tb](const auto& in) { return ops::bmm(in[0], in[1], {.transpose_a = ta, .transpose_b = tb}); },
                       {leaf(random_tensor(sa, ++seed)), leaf(random_tensor(sb, ++seed))});
    }
  // Used twice, so the second gradient adds into the first.
  expect_gradients("bmm of x with itself", [](const auto& in) { return ops::bmm(in[0], in[0], {.transpose_b = true}); },
                   {leaf(random_tensor({3, 4, 5}, 70))});
}

BOOST_AUTO_TEST_CASE(bmm_multiplies_each_matrix_of_the_batch) {
  const Tensor a = random_tensor({2, 3, 4, 5}, 71), b = random_tensor({2, 3, 6, 5}, 72);
  const Tensor c = ops::bmm(a, b, {.transpose_b = true});
  BOOST_TEST(c.shape() == Shape({2, 3, 4, 6}));
  const std::vector<float> av = a.to_vector(), bv = b.to_vector(), cv = c.to_vector();
  double worst = 0;
  for (int n = 0; n < 6; ++n)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) {
        double expected = 0;
        for (int k = 0; k < 5; ++k) expected += double(av[(n * 4 + i) * 5 + k]) * double(bv[(n * 6 + j) * 5 + k]);
        worst = std::max(worst, std::abs(expected - double(cv[(n * 4 + i) * 6 + j])));
      }
  BOOST_TEST(worst < 1e-5);
  BOOST_CHECK_THROW(ops::bmm(a, b), ShapeError);  // 5 against 6
  BOOST_CHECK_THROW(ops::bmm(random_tensor({4, 5}, 1), random_tensor({5, 4}, 2)), ShapeError);  // rank 2: matmul's
  BOOST_CHECK_THROW(ops::bmm(a, random_tensor({3, 2, 5, 6}, 3)), ShapeError);  // other leading dimensions
  // Under autocast: bfloat16 operands and result, float32 accumulation, float32 gradients for
  // float32 leaves.
  const Tensor la = leaf(a.clone()), lb = leaf(b.clone());
  Tensor low;
  {
    const AutocastGuard autocast{DType::bf16};
    low = ops::bmm(la, lb, {.transpose_b = true});
  }
  BOOST_TEST(low.dtype() == DType::bf16);
  const std::vector<float> lv = ops::float32(low).to_vector();
  double worst_low = 0;
  for (std::size_t i = 0; i < cv.size(); ++i) worst_low = std::max(worst_low, std::abs(double(lv[i]) - double(cv[i])));
  BOOST_TEST(worst_low < 0.1);  // bfloat16 keeps 8 bits: |c| < 5 here
  ops::sum(ops::float32(low)).backward();
  BOOST_TEST(la.grad().dtype() == DType::f32);
  BOOST_TEST(la.grad().shape() == a.shape());
}

BOOST_AUTO_TEST_CASE(shape_ops) {
  const Tensor x = random_tensor({4, 3, 2}, 70);
  expect_gradients("reshape", [](const auto& in) { return ops::reshape(in[0], {6, 4}) * 2.0f; }, {leaf(x.clone())});
  expect_gradients("flatten", [](const auto& in) { return ops::flatten(in[0]) * 2.0f; }, {leaf(x.clone())});
  expect_gradients("narrow", [](const auto& in) { return ops::narrow(in[0], 1, 3) * 2.0f; }, {leaf(x.clone())});
  expect_gradients("clone", [](const auto& in) { return ops::clone(in[0]) * 2.0f; }, {leaf(x.clone())});
  expect_gradients("permute", [](const auto& in) { return ops::permute(in[0], {2, 0, 1}) * 2.0f; }, {leaf(x.clone())});
  expect_gradients("transpose", [](const auto& in) { return ops::transpose(in[0], 0, -1) * 2.0f; }, {leaf(x.clone())});
  // Used twice: the second gradient adds into the first (the kernel's accumulate path).
  expect_gradients("permute used twice", [](const auto& in) { return ops::permute(in[0], {1, 2, 0}) + ops::permute(in[0], {1, 2, 0}); },
                   {leaf(x.clone())});
}

BOOST_AUTO_TEST_CASE(permute_moves_elements_as_torch_permute) {
  // x[i][j][k] = 100 i + 10 j + k; y = x.permute(2, 0, 1): y[k][i][j] = x[i][j][k].
  std::vector<float> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) v.push_back(static_cast<float>(100 * i + 10 * j + k));
  const Tensor x = Tensor::from(v, {2, 3, 4});
  const Tensor y = ops::permute(x, {2, 0, 1});
  BOOST_TEST(y.shape() == Shape({4, 2, 3}));
  const std::vector<float> out = y.to_vector();
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) BOOST_TEST(out[static_cast<std::size_t>((k * 2 + i) * 3 + j)] == 100 * i + 10 * j + k);
  BOOST_TEST(ops::transpose(ops::transpose(x, 0, 2), 0, 2).to_vector() == v, boost::test_tools::per_element());
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  BOOST_TEST(ops::transpose(labels, 0, 1).to_vector<std::int32_t>() == std::vector<std::int32_t>({1, 4, 2, 5, 3, 6}),
             boost::test_tools::per_element());
  BOOST_CHECK_THROW(ops::permute(x, {0, 1}), ShapeError);
  BOOST_CHECK_THROW(ops::permute(x, {0, 0, 1}), ShapeError);
  BOOST_CHECK_THROW(ops::permute(x, {0, 1, 3}), Error);
}

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

// Attention written out of ops for comparison: (B, H, T, d) operands.
Tensor attention_written_out(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, const Tensor& mask,
                             float scale) {
  const Tensor p = ops::masked_softmax(ops::bmm(q, k, {.transpose_b = true}), {.scale = scale, .causal = causal, .mask = mask});
  return ops::bmm(p, v);
}

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

BOOST_AUTO_TEST_CASE(loss_functions) {
  const Tensor logits = random_tensor({6, 5}, 90, -3, 3);
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{0, 4, 1, 1, 3, 2}, {6});
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    for (float smoothing : {0.0f, 0.1f}) {
      expect_gradients("cross_entropy", [=](const auto& in) { return ops::cross_entropy(in[0], labels, r, smoothing); },
                       {leaf(logits.clone())});
    }
    expect_gradients("mse_loss", [=](const auto& in) { return ops::mse_loss(in[0], in[1], r); },
                     {leaf(random_tensor({4, 3}, 91)), leaf(random_tensor({4, 3}, 92))});
  }
}

BOOST_AUTO_TEST_CASE(dropout_with_a_fixed_mask) {
  // Re-seeding inside f gives the same mask at every evaluation, so the op is a fixed function.
  expect_gradients("dropout", [](const auto& in) {
    Generator gen{99};
    return ops::dropout(in[0], 0.3f, true, &gen);
  }, {leaf(random_tensor({8, 16}, 93))});
}

BOOST_AUTO_TEST_CASE(gradcheck_catches_a_wrong_gradient) {
  // A deliberately wrong "gradient": detach() hides part of the function from autograd.
  const GradcheckResult r =
      gradcheck([](const auto& in) { return in[0] * in[0].detach(); }, {leaf(random_tensor({5}, 94, 0.5f, 1))});
  BOOST_TEST(!r.ok);
  BOOST_TEST(r.report.find("input 0") != std::string::npos);
}
