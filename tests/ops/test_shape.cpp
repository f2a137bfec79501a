// Shape ops (framework/ops/shape.cpp): slices, splits, concatenation, embedding rows, reshapes and
// permutations, values and finite-difference gradients.

#include "op_test.hpp"
BOOST_AUTO_TEST_SUITE(shape)

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

BOOST_AUTO_TEST_SUITE_END()
