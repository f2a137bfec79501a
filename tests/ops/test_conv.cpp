// conv2d (framework/ops/conv.cpp): values against direct loops written from the definition,
// finite-difference gradients in every configuration (stride, padding, dilation, groups, bias), in
// each form of the CPU convolution, bfloat16 against float32, and the errors for shapes that do not
// fit.

#include "op_test.hpp"

#include <accrue/kernels/conv.hpp>
#include <accrue/kernels/cpu/conv.hpp>

using ops::Conv2dOptions;
using ops::Pool2dOptions;

namespace {

struct ConvCase {
  std::string name;
  Shape x, w;
  Conv2dOptions options;
  bool bias;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {"3x3", {2, 3, 6, 5}, {4, 3, 3, 3}, {}, true},
      {"3x3 padding 1", {2, 3, 5, 5}, {4, 3, 3, 3}, {.padding = 1}, true},
      {"stride 2 padding (1, 0)", {2, 2, 7, 6}, {3, 2, 3, 2}, {.stride = 2, .padding = {1, 0}}, true},
      {"stride (2, 1) dilation 2", {1, 2, 9, 8}, {3, 2, 3, 3}, {.stride = {2, 1}, .padding = 2, .dilation = 2}, false},
      {"groups 2", {2, 4, 5, 5}, {6, 2, 3, 3}, {.padding = 1, .groups = 2}, true},
      {"depthwise", {2, 3, 5, 4}, {3, 1, 3, 3}, {.padding = 1, .groups = 3}, false},
      {"1x1", {3, 4, 3, 3}, {5, 4, 1, 1}, {}, true},
      {"1x1 stride 2", {2, 4, 5, 5}, {2, 4, 1, 1}, {.stride = 2}, false},
      {"5x5 padding 2 single sample", {1, 1, 6, 6}, {2, 1, 5, 5}, {.padding = 2}, true},
      // Wide enough for the implicit GEMM on its own: 70 filters (a panel of 64 lanes and one of 16,
      // 6 of them used), 18 input channels for the input's gradient; two groups of 32 filters.
      {"3x3 padding 1, 70 filters", {2, 18, 5, 6}, {70, 18, 3, 3}, {.padding = 1}, true},
      {"3x3 padding 1, groups 2 of 32 filters", {3, 32, 4, 5}, {64, 16, 3, 3}, {.padding = 1, .groups = 2}, false},
  };
  return cases;
}

// The definition: y[n, k, p, q] = b[k] + sum over c in k's group, r, s of
// x[n, c, p*sh - ph + r*dh, q*sw - pw + s*dw] w[k, c - group start, r, s].
std::vector<float> direct_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dOptions& o) {
  const auto xv = x.to_vector(), wv = w.to_vector();
  const std::int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), K = w.size(0), Cg = w.size(1),
                     R = w.size(2), S = w.size(3), Kg = K / o.groups;
  const std::int64_t P = (H + 2 * o.padding.h - o.dilation.h * (R - 1) - 1) / o.stride.h + 1;
  const std::int64_t Q = (W + 2 * o.padding.w - o.dilation.w * (S - 1) - 1) / o.stride.w + 1;
  std::vector<float> y(static_cast<std::size_t>(N * K * P * Q));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          double acc = b.defined() ? b.to_vector()[k] : 0.0;
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t r = 0; r < R; ++r)
              for (std::int64_t s = 0; s < S; ++s) {
                const std::int64_t h = p * o.stride.h - o.padding.h + r * o.dilation.h;
                const std::int64_t ww = q * o.stride.w - o.padding.w + s * o.dilation.w;
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                const std::int64_t cin = (k / Kg) * Cg + c;
                acc += static_cast<double>(xv[((n * C + cin) * H + h) * W + ww]) * wv[((k * Cg + c) * R + r) * S + s];
              }
          y[((n * K + k) * P + p) * Q + q] = static_cast<float>(acc);
        }
  (void)C;
  return y;
}

// The input's and the weight's gradients of a convolution of stride 1, dilation 1 and one group,
// from its definition: each term x[n, c, p - pad + r, q - pad + s] w[k, c, r, s] of y[n, k, p, q]
// adds dy[n, k, p, q] w[k, c, r, s] to dx and dy[n, k, p, q] x[n, c, ...] to dw (sums in double).
struct DirectGradients {
  std::vector<float> dx, dw;
};
DirectGradients direct_gradients(const Tensor& dy, const Tensor& x, const Tensor& w, std::int64_t pad) {
  const auto dyv = dy.to_vector(), xv = x.to_vector(), wv = w.to_vector();
  const std::int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), K = w.size(0), R = w.size(2),
                     S = w.size(3), P = dy.size(2), Q = dy.size(3);
  std::vector<double> dx(static_cast<std::size_t>(N * C * H * W)), dw(static_cast<std::size_t>(K * C * R * S));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          const double g = dyv[((n * K + k) * P + p) * Q + q];
          for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t r = 0; r < R; ++r)
              for (std::int64_t s = 0; s < S; ++s) {
                const std::int64_t h = p - pad + r, ww = q - pad + s;
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                const std::int64_t xi = ((n * C + c) * H + h) * W + ww, wi = ((k * C + c) * R + r) * S + s;
                dx[xi] += g * wv[wi];
                dw[wi] += g * xv[xi];
              }
        }
  return {{dx.begin(), dx.end()}, {dw.begin(), dw.end()}};
}

// Runs `check` once for each form of the CPU convolution, pinned for every call: the one the
// processor chooses, im2col (with OpenBLAS in float32, the bfloat16 GEMM under autocast), and the
// implicit GEMM where AVX-512 or AVX2 allows it (over channel pairs in bfloat16, with AVX-512 BF16).
template <class F>
void in_each_form(const F& check) {
  using kernels::cpu::Conv2dForm;
  std::vector<std::pair<std::string, Conv2dForm>> forms = {{"automatic", Conv2dForm::automatic},
                                                           {"im2col", Conv2dForm::im2col}};
  if (kernels::cpu::implicit_gemm_available()) {
    forms.emplace_back("implicit GEMM", Conv2dForm::implicit_gemm);
    forms.emplace_back("Winograd", Conv2dForm::winograd);
  } else
    BOOST_TEST_MESSAGE(
        "skipped: the implicit GEMM and Winograd convolutions need AVX-512 or AVX2 with FMA, which this processor "
        "lacks");
  struct Unpin {
    ~Unpin() { kernels::cpu::pin_conv2d_form(Conv2dForm::automatic); }
  } unpin;
  for (const auto& [name, form] : forms) {
    kernels::cpu::pin_conv2d_form(form);
    BOOST_TEST_CONTEXT("convolution form: " << name) { check(); }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(conv)

BOOST_AUTO_TEST_CASE(conv2d_matches_its_definition) {
  in_each_form([] {
    std::uint64_t seed = 10;
    for (const ConvCase& c : conv_cases()) {
      const Tensor x = random_tensor(c.x, ++seed), w = random_tensor(c.w, ++seed);
      const Tensor b = c.bias ? random_tensor({c.w[0]}, ++seed) : Tensor();
      const Tensor y = ops::conv2d(x, w, b, c.options);
      const auto expected = direct_conv(x, w, b, c.options);
      const auto got = y.to_vector();
      BOOST_REQUIRE_MESSAGE(got.size() == expected.size(), c.name << ": output shape " << y.shape());
      double worst = 0.0;
      for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - expected[i]));
      BOOST_TEST(worst < 1e-5, c.name << ": largest difference " << worst);
    }
  });
}

// Larger convolutions in every form against a double-precision sum, output, input gradient and
// weight gradient: the CNN's second (32 -> 64 channels, 14x14), whose products are 288 deep (576
// for the input's gradient, 392 for the weight's), and a 30x31 image, which Winograd transforms
// and multiplies in two bands of tile rows (odd Q). The float32 forms were off by 6e-6 to 3e-5 on
// the first (Winograd, summing 32 or 64 terms per element, the least on y and dx; the implicit
// GEMM's 576-term input gradient the most); a wrong transform, tile or band is off by about the
// values, about 10. Images of a few positions are read several samples to a product (the
// implicit GEMM's blocks): whole and partial blocks, in each thread's share of the batch.
BOOST_AUTO_TEST_CASE(larger_conv2d_matches_its_definition) {
  struct Case {
    std::string name;
    Shape x, w;
  };
  const std::vector<Case> cases = {{"the CNN's second convolution", {2, 32, 14, 14}, {64, 32, 3, 3}},
                                   {"30x31, 16 channels", {1, 16, 30, 31}, {16, 16, 3, 3}},
                                   {"2x2 images, five samples read in blocks", {5, 32, 2, 2}, {32, 32, 3, 3}},
                                   {"4x4 images, blocks of four and three", {7, 16, 4, 4}, {32, 16, 3, 3}}};
  std::uint64_t seed = 30;
  for (const Case& c : cases) {
    const Tensor x = random_tensor(c.x, ++seed), w = random_tensor(c.w, ++seed), b = random_tensor({c.w[0]}, ++seed),
                 dy = random_tensor({c.x[0], c.w[0], c.x[2], c.x[3]}, ++seed);
    const Conv2dOptions o{.padding = 1};
    const auto expected_y = direct_conv(x, w, b, o);
    const DirectGradients expected = direct_gradients(dy, x, w, 1);
    in_each_form([&] {
      const Tensor xl = leaf(x.clone()), wl = leaf(w.clone());
      const Tensor y = ops::conv2d(xl, wl, b, o);
      y.backward(dy);
      const double y_error = largest_difference(y.to_vector(), expected_y);
      const double dx_error = largest_difference(xl.grad().to_vector(), expected.dx);
      const double dw_error = largest_difference(wl.grad().to_vector(), expected.dw);
      BOOST_TEST_MESSAGE(c.name << ": largest difference: y " << y_error << ", dx " << dx_error << ", dw "
                                << dw_error);
      BOOST_TEST(y_error < 1e-4, c.name);
      BOOST_TEST(dx_error < 1e-4, c.name);
      BOOST_TEST(dw_error < 1e-4, c.name);
    });
  }
}

BOOST_AUTO_TEST_CASE(conv2d_gradients) {
  in_each_form([] {
    std::uint64_t seed = 100;
    for (const ConvCase& c : conv_cases()) {
      const Tensor x = leaf(random_tensor(c.x, ++seed)), w = leaf(random_tensor(c.w, ++seed));
      std::vector<Tensor> inputs{x, w};
      if (c.bias) inputs.push_back(leaf(random_tensor({c.w[0]}, ++seed)));
      const Conv2dOptions o = c.options;
      expect_gradients(
          "conv2d " + c.name,
          [o](const std::vector<Tensor>& in) { return ops::conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), o); },
          inputs, {.max_elements = 400});
    }
  });
}

BOOST_AUTO_TEST_CASE(conv2d_gradients_accumulate_into_existing_ones) {
  // Two backward passes add up: the second lands on .grad() through the kernels' accumulate path.
  in_each_form([] {
    const Tensor x = leaf(random_tensor({2, 20, 5, 5}, 1)), w = leaf(random_tensor({24, 20, 3, 3}, 2)),
                 b = leaf(random_tensor({24}, 3));
    ops::sum(ops::conv2d(x, w, b, {.padding = 1})).backward();
    const auto gx = x.grad().to_vector(), gw = w.grad().to_vector(), gb = b.grad().to_vector();
    ops::sum(ops::conv2d(x, w, b, {.padding = 1})).backward();
    const auto gx2 = x.grad().to_vector(), gw2 = w.grad().to_vector(), gb2 = b.grad().to_vector();
    for (std::size_t i = 0; i < gx.size(); ++i) BOOST_TEST(gx2[i] == 2 * gx[i], boost::test_tools::tolerance(1e-6f));
    for (std::size_t i = 0; i < gw.size(); ++i) BOOST_TEST(gw2[i] == 2 * gw[i], boost::test_tools::tolerance(1e-6f));
    for (std::size_t i = 0; i < gb.size(); ++i) BOOST_TEST(gb2[i] == 2 * gb[i], boost::test_tools::tolerance(1e-6f));
  });
}

BOOST_AUTO_TEST_CASE(shapes_that_do_not_fit_are_named) {
  using accrue::test::message_has;
  const Tensor x = random_tensor({2, 3, 5, 5}, 1);
  BOOST_CHECK_EXCEPTION(ops::conv2d(x, random_tensor({4, 2, 3, 3}, 2), Tensor()), ShapeError,
                        message_has({"(2, 3, 5, 5)", "3 channels", "(4, 2, 3, 3)"}));
  BOOST_CHECK_EXCEPTION(ops::conv2d(x, random_tensor({4, 3, 7, 7}, 2), Tensor()), ShapeError,
                        message_has({"smaller than the 7x7 kernel"}));
  BOOST_CHECK_EXCEPTION(ops::conv2d(x, random_tensor({4, 1, 3, 3}, 2), Tensor(), {.groups = 2}), ShapeError,
                        message_has({"divide into 2 groups"}));
  BOOST_CHECK_EXCEPTION(ops::conv2d(random_tensor({3, 5, 5}, 1), random_tensor({4, 3, 3, 3}, 2), Tensor()), ShapeError,
                        message_has({"(N, C, H, W)", "(3, 5, 5)"}));
  BOOST_CHECK_EXCEPTION(ops::max_pool2d(x, {.kernel = 2, .padding = 2}), ValueError, message_has({"at most half"}));
  BOOST_CHECK_EXCEPTION(ops::max_pool2d(x, {.kernel = 6}), ShapeError, message_has({"smaller than the 6 window"}));
}

// conv2d under bfloat16 autocast, with a float32 or a bfloat16 input: the output within one
// bfloat16 rounding of the definition on bfloat16-rounded operands, and the gradients of two
// backward passes (the second adding to the first) those of the float32 kernels on the same
// rounded operands, to float32 summation error (bfloat16 dx: within two roundings).
BOOST_AUTO_TEST_CASE(bf16_conv2d_matches_float32_on_rounded_operands) {
  if (!kernels::conv2d_runs_bf16(Device::cpu())) {
    BOOST_TEST_MESSAGE("skipped: this processor has neither AMX nor AVX-512 BF16, so conv2d stays float32 under autocast");
    return;
  }
  in_each_form([] {
    const auto rounded = [](const Tensor& t) { return ops::cast(ops::cast(t, DType::bf16), DType::f32); };
    std::uint64_t seed = 500;
    for (const ConvCase& c : conv_cases())
      for (const DType x_type : {DType::f32, DType::bf16}) {
        const std::string name = c.name + (x_type == DType::f32 ? ", float32 x" : ", bfloat16 x");
        const Tensor x32 = random_tensor(c.x, ++seed), w = leaf(random_tensor(c.w, ++seed));
        const Tensor b = c.bias ? leaf(random_tensor({c.w[0]}, ++seed)) : Tensor();
        const Tensor x = leaf(x_type == DType::f32 ? x32 : ops::cast(x32, DType::bf16));
        Tensor y;
        {
          const AutocastGuard autocast{DType::bf16};
          y = ops::conv2d(x, w, b, c.options);
        }
        BOOST_REQUIRE_MESSAGE(y.dtype() == DType::bf16, name << ": output is " << dtype_name(y.dtype()));
        const Tensor xr = rounded(x32.detach()), wr = rounded(w.detach());
        const auto expected = direct_conv(xr, wr, c.bias ? b.detach() : Tensor(), c.options);
        const auto got = ops::cast(y, DType::f32).to_vector();
        std::int64_t off = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
          off += std::abs(double(got[i]) - expected[i]) > std::abs(expected[i]) * 0.5 / 128 + 1e-5;
        BOOST_TEST(off == 0, name << ": " << off << " outputs further than one rounding from the definition");

        const Tensor dy = ops::cast(random_tensor(y.shape(), ++seed), DType::bf16);
        y.backward(dy, /*retain_graph=*/true);
        y.backward(dy);
        const Tensor rx = leaf(xr), rw = leaf(wr), rb = c.bias ? leaf(b.detach().clone()) : Tensor();
        const Tensor ry = ops::conv2d(rx, rw, rb, c.options);
        const Tensor dy32 = ops::cast(dy, DType::f32);
        ry.backward(dy32, /*retain_graph=*/true);
        ry.backward(dy32);
        test::check_close(w.grad(), rw.grad(), 1e-4, 1e-4, name + ": weight gradient");
        if (c.bias) test::check_close(b.grad(), rb.grad(), 1e-4, 1e-4, name + ": bias gradient");
        BOOST_REQUIRE(x.grad().dtype() == x_type);
        if (x_type == DType::f32) test::check_close(x.grad(), rx.grad(), 1e-4, 1e-4, name + ": input gradient");
        else test::check_close(ops::cast(x.grad(), DType::f32), rx.grad(), 1e-4, 1.0 / 128, name + ": input gradient");
      }
  });
}

BOOST_AUTO_TEST_SUITE_END()
