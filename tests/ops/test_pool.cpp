// max_pool2d and avg_pool2d (framework/ops/pool.cpp): values against direct loops written from the
// definitions, finite-difference gradients in every mode, and bfloat16 against float32.

#include "op_test.hpp"

using ops::Pool2dOptions;

BOOST_AUTO_TEST_SUITE(pool)

BOOST_AUTO_TEST_CASE(pooling_matches_its_definition) {
  // 4x5 plane, 3x3 windows, stride 2, padding 1: corners see padding.
  const Tensor x = Tensor::from({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, {1, 1, 4, 5});
  const Pool2dOptions o{.kernel = 3, .stride = 2, .padding = 1};
  BOOST_TEST(ops::max_pool2d(x, o).to_vector() == (std::vector<float>{7, 9, 10, 17, 19, 20}), boost::test_tools::per_element());
  // Windows with padding: (0,0) covers rows -1..1, cols -1..1 -> 1+2+6+7 = 16, divided by 9 (padding
  // counts) or by 4 (it does not).
  const auto inc = ops::avg_pool2d(x, o).to_vector();
  const auto exc = ops::avg_pool2d(x, {.kernel = 3, .stride = 2, .padding = 1, .count_include_pad = false}).to_vector();
  BOOST_TEST(inc[0] == 16.0f / 9, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(exc[0] == 16.0f / 4, boost::test_tools::tolerance(1e-6f));
  // (1, 2): rows 1..3, cols 3..5 (col 5 is padding): 9+10+14+15+19+20 = 87 over 9 or 6.
  BOOST_TEST(inc[5] == 87.0f / 9, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(exc[5] == 87.0f / 6, boost::test_tools::tolerance(1e-6f));
  // Default stride is the kernel; NaN wins a max window.
  Tensor y = Tensor::from({1, 2, 3, 4}, {1, 1, 2, 2});
  BOOST_TEST(ops::max_pool2d(y).item() == 4.0f);
  y.data<float>()[1] = NAN;
  BOOST_TEST(std::isnan(ops::max_pool2d(y).item()));
}

BOOST_AUTO_TEST_CASE(pooling_gradients) {
  const std::vector<std::pair<std::string, Pool2dOptions>> cases = {
      {"2x2", {}},
      {"3x3 stride 2 padding 1", {.kernel = 3, .stride = 2, .padding = 1}},
      {"(3, 2) stride (1, 2)", {.kernel = {3, 2}, .stride = Size2{1, 2}}},
      {"3x3 stride 1 padding 1 exclude padding", {.kernel = 3, .stride = 1, .padding = 1, .count_include_pad = false}},
  };
  std::uint64_t seed = 200;
  for (const auto& [name, o] : cases) {
    expect_gradients("max_pool2d " + name, [o](const auto& in) { return ops::max_pool2d(in[0], o); },
                     {leaf(distinct_values({2, 3, 6, 7}, ++seed))});
    expect_gradients("avg_pool2d " + name, [o](const auto& in) { return ops::avg_pool2d(in[0], o); },
                     {leaf(random_tensor({2, 3, 6, 7}, ++seed))});
  }
  // The vectorised 2x2 path: even sizes (no uncovered column), and rows of more than 16 windows.
  for (const Shape& s : {Shape{2, 3, 6, 8}, Shape{1, 2, 4, 40}, Shape{1, 1, 5, 35}})
    expect_gradients("max_pool2d 2x2 on " + s.str(), [](const auto& in) { return ops::max_pool2d(in[0]); },
                     {leaf(distinct_values(s, ++seed, 0.05f))});
}

// Pooling a bfloat16 tensor stays in bfloat16 on the CPU: max pooling gives the float32 results of
// the same values exactly, average pooling and gradients within one rounding of them; a second
// backward adds to the first.
BOOST_AUTO_TEST_CASE(bf16_pooling_matches_float32_of_the_same_values) {
  const std::vector<std::pair<std::string, Pool2dOptions>> cases = {
      {"2x2", {}},
      {"3x3 stride 2 padding 1", {.kernel = 3, .stride = 2, .padding = 1}},
      {"3x3 stride 1 padding 1 exclude padding", {.kernel = 3, .stride = 1, .padding = 1, .count_include_pad = false}},
  };
  std::uint64_t seed = 700;
  for (const auto& [name, o] : cases)
    for (const bool max : {true, false}) {
      const std::string what = (max ? "max_pool2d " : "avg_pool2d ") + name;
      const auto pool = [&, o = o](const Tensor& t) { return max ? ops::max_pool2d(t, o) : ops::avg_pool2d(t, o); };
      const Tensor x = leaf(ops::cast(distinct_values({2, 3, 6, 34}, ++seed, 0.01f), DType::bf16));
      const Tensor x32 = leaf(ops::cast(x.detach(), DType::f32));
      const Tensor y = pool(x), y32 = pool(x32);
      BOOST_REQUIRE_MESSAGE(y.dtype() == DType::bf16, what << ": output is " << dtype_name(y.dtype()));
      test::check_close(ops::cast(y, DType::f32), y32, max ? 0.0 : 1e-6, max ? 0.0 : 1.0 / 256, what);
      const Tensor dy = ops::cast(random_tensor(y.shape(), ++seed), DType::bf16), dy32 = ops::cast(dy, DType::f32);
      for (int pass = 0; pass < 2; ++pass) {
        pool(x).backward(dy);
        pool(x32).backward(dy32);
      }
      BOOST_REQUIRE(x.grad().dtype() == DType::bf16);
      test::check_close(ops::cast(x.grad(), DType::f32), x32.grad(), 1e-6, 1.0 / 128, what + ": gradient");
    }
}

BOOST_AUTO_TEST_SUITE_END()
