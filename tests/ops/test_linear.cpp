// Matrix products (framework/ops/linear.cpp): matmul, linear and bmm, values and finite-difference
// gradients.

#include "op_test.hpp"
BOOST_AUTO_TEST_SUITE(linear)

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

BOOST_AUTO_TEST_SUITE_END()
