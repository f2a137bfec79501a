// float16 and bfloat16: conversions (every bit pattern, ties, subnormals, inf, NaN) and the
// low-precision GEMMs against double-precision products of the same rounded inputs.

#include "../test_util.hpp"

#include <accrue/framework/core/half.hpp>
#include <accrue/kernels/cpu/gemm/bf16.hpp>
#include <accrue/kernels/gemm.hpp>
#include <cmath>
#include <cstring>
#include <limits>

using namespace accrue;
using namespace accrue::kernels::common;
using namespace accrue::test;

namespace {
// The nearest representable value of a format given as a sorted list of its finite values, ties to
// the one with an even last bit: an independent reference for the rounding.
template <class Decode>
std::uint16_t nearest(float f, Decode decode) {
  // Brute force over all 65536 patterns of the same sign.
  const bool negative = std::signbit(f);
  double best_err = std::numeric_limits<double>::infinity();
  std::uint16_t best = 0;
  for (std::uint32_t h = 0; h < 0x8000; ++h) {
    const std::uint16_t bits = static_cast<std::uint16_t>(h | (negative ? 0x8000u : 0u));
    const float v = decode(bits);
    if (!std::isfinite(v)) continue;
    const double err = std::abs(static_cast<double>(v) - f);
    if (err < best_err || (err == best_err && (bits & 1u) == 0)) {
      best_err = err;
      best = bits;
    }
  }
  return best;
}
}  // namespace

BOOST_AUTO_TEST_CASE(every_half_value_survives_a_round_trip) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f16 = float_from_f16_bits(bits), b16 = float_from_bf16_bits(bits);
    if (std::isnan(f16)) BOOST_REQUIRE(std::isnan(float_from_f16_bits(f16_bits_from_float(f16))));
    else BOOST_REQUIRE_EQUAL(f16_bits_from_float(f16), bits);
    if (std::isnan(b16)) BOOST_REQUIRE(std::isnan(float_from_bf16_bits(bf16_bits_from_float(b16))));
    else BOOST_REQUIRE_EQUAL(bf16_bits_from_float(b16), bits);
  }
}

BOOST_AUTO_TEST_CASE(rounding_edge_cases) {
  // Ties go to even: 1 + 2^-11 sits halfway between float16 1 and 1 + 2^-10.
  BOOST_TEST(f16_bits_from_float(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  BOOST_TEST(f16_bits_from_float(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  BOOST_TEST(bf16_bits_from_float(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  BOOST_TEST(bf16_bits_from_float(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  // Overflow to infinity at 65520 (float16); the largest finite float16 stays.
  BOOST_TEST(f16_bits_from_float(65504.0f) == 0x7bff);
  BOOST_TEST(f16_bits_from_float(65519.0f) == 0x7bff);
  BOOST_TEST(f16_bits_from_float(65520.0f) == 0x7c00);
  BOOST_TEST(bf16_bits_from_float(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to inf
  // Subnormals: the smallest float16 subnormal is 2^-24; half of it ties to zero, a bit more rounds up.
  BOOST_TEST(f16_bits_from_float(std::ldexp(1.0f, -24)) == 0x0001);
  BOOST_TEST(f16_bits_from_float(std::ldexp(1.0f, -25)) == 0x0000);
  BOOST_TEST(f16_bits_from_float(std::ldexp(1.5f, -25)) == 0x0001);
  BOOST_TEST(float_from_f16_bits(0x03ff) == std::ldexp(1023.0f, -24));
  BOOST_TEST(bf16_bits_from_float(std::numeric_limits<float>::denorm_min()) == 0x0000);
  BOOST_TEST(bf16_bits_from_float(std::ldexp(1.0f, -133)) == 0x0001);  // a bfloat16 subnormal is kept
  // Infinities, signed zero and NaN.
  BOOST_TEST(f16_bits_from_float(-std::numeric_limits<float>::infinity()) == 0xfc00);
  BOOST_TEST(bf16_bits_from_float(-0.0f) == 0x8000);
  BOOST_TEST(std::isnan(float_from_f16_bits(f16_bits_from_float(std::nanf("")))));
  BOOST_TEST(std::isnan(float_from_bf16_bits(bf16_bits_from_float(std::nanf("")))));
  // Against brute-force nearest-even over a spread of values (float16 subnormals up to 2^14, inside its
  // finite range, where the brute force applies), including subnormals.
  Generator gen{3};
  for (int i = 0; i < 300; ++i) {
    const float f = static_cast<float>(std::ldexp(gen.next_double() * 2 - 1, static_cast<int>(gen.below(54)) - 40));
    BOOST_REQUIRE_EQUAL(f16_bits_from_float(f), nearest(f, float_from_f16_bits));
    BOOST_REQUIRE_EQUAL(bf16_bits_from_float(f), nearest(f, float_from_bf16_bits));
  }
}

BOOST_AUTO_TEST_CASE(tensor_conversions_agree_with_the_reference_bit_for_bit) {
  // Every float16 and bfloat16 pattern widened, plus values between them (ties, subnormals, NaN,
  // inf), through the CPU kernels (F16C where present) against framework/core/half.hpp.
  std::vector<float> values;
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    values.push_back(float_from_f16_bits(static_cast<std::uint16_t>(h)));
    values.push_back(float_from_bf16_bits(static_cast<std::uint16_t>(h)));
    const float next = float_from_f16_bits(static_cast<std::uint16_t>(h + 1));
    if (std::isfinite(values[values.size() - 2]) && std::isfinite(next))
      values.push_back((values[values.size() - 2] + next) / 2);  // a tie, or near one
  }
  const Tensor x = Tensor::from(values, {static_cast<std::int64_t>(values.size())});
  for (DType t : {DType::f16, DType::bf16}) {
    const Tensor low = ops::cast(x, t);
    const Tensor back = ops::cast(low, DType::f32);
    const auto lv = back.to_vector();
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::uint16_t expected = t == DType::f16 ? f16_bits_from_float(values[i]) : bf16_bits_from_float(values[i]);
      const float widened = t == DType::f16 ? float_from_f16_bits(expected) : float_from_bf16_bits(expected);
      if (std::isnan(widened)) BOOST_REQUIRE(std::isnan(lv[i]));
      else BOOST_REQUIRE_MESSAGE(std::memcmp(&lv[i], &widened, 4) == 0, dtype_name(t) << " of " << values[i]);
    }
  }
}

BOOST_AUTO_TEST_CASE(tensors_convert_and_print) {
  const Tensor x = Tensor::from({1.0f, 1.0f / 3.0f, -2.5f}, {3}, {.dtype = DType::bf16});
  BOOST_TEST(x.dtype() == DType::bf16);
  BOOST_TEST(x.nbytes() == 6u);
  BOOST_TEST(x.to_vector()[1] == float_from_bf16_bits(bf16_bits_from_float(1.0f / 3.0f)));
  const Tensor y = ops::cast(x, DType::f16);
  BOOST_TEST(y.to_vector()[2] == -2.5f);
  BOOST_TEST(ops::cast(y, DType::f32).dtype() == DType::f32);
  BOOST_TEST(x.str().find("bfloat16") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(low_precision_gemm_matches_double_products_of_rounded_inputs) {
  std::uint64_t seed = 10;
  for (DType low : {DType::bf16, DType::f16}) {
    for (const auto& [M, N, K] : std::vector<std::array<std::int64_t, 3>>{
             {1, 1, 1}, {3, 5, 7}, {16, 512, 784}, {64, 10, 512}, {8, 300, 33}, {7, 49, 64}, {300, 20, 16}}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          if (ta && tb) continue;
          for (DType out : {DType::f32, low}) {
            for (float beta : {0.0f, 1.0f}) {
              const Tensor A = ops::cast(random_tensor(ta ? Shape{K, M} : Shape{M, K}, ++seed), low);
              const Tensor B = ops::cast(random_tensor(tb ? Shape{N, K} : Shape{K, N}, ++seed), low);
              const Tensor C0 = ops::cast(random_tensor({M, N}, ++seed), out);
              const auto a = A.to_vector(), b = B.to_vector(), c0 = C0.to_vector();
              std::vector<float> expected(static_cast<std::size_t>(M * N));
              for (std::int64_t i = 0; i < M; ++i)
                for (std::int64_t j = 0; j < N; ++j) {
                  double s = 0;
                  for (std::int64_t k = 0; k < K; ++k)
                    s += double(ta ? a[k * M + i] : a[i * K + k]) * double(tb ? b[j * K + k] : b[k * N + j]);
                  expected[i * N + j] = static_cast<float>(0.5 * s + beta * c0[i * N + j]);
                }
              const Tensor C = C0.clone();
              kernels::gemm(ta, tb, 0.5f, A, B, beta, C, low);
              // float32 accumulation; a low-precision C is rounded once more (2^-8 for bfloat16).
              const double rtol = out == DType::f32 ? 1e-5 : (low == DType::bf16 ? 8e-3 : 1e-3);
              accrue::test::check_close(C.to_vector(), expected, 1e-4 * std::sqrt(double(K)), rtol,
                                        fmt::format("{} gemm {}x{}x{} ta={} tb={} out={} beta={}", dtype_name(low), M, N,
                                                    K, ta, tb, dtype_name(out), beta));
            }
          }
        }
      }
    }
  }
}

// Master weights stay float32 under autocast: gemm rounds such operands itself (into its packs, or
// in the copies it widens where the processor has no bfloat16 kernel), with the bits of operands
// rounded beforehand.
BOOST_AUTO_TEST_CASE(float32_operands_multiply_as_their_rounded_values) {
  std::uint64_t seed = 70;
  for (DType low : {DType::bf16, DType::f16})
    for (const auto& [M, N, K] : std::vector<std::array<std::int64_t, 3>>{{16, 512, 784}, {7, 49, 64}, {300, 20, 16}}) {
      const Tensor A = random_tensor({M, K}, ++seed), B = random_tensor({N, K}, ++seed);
      const Tensor from_f32 = Tensor::empty({M, N}), from_low = Tensor::empty({M, N});
      kernels::gemm(false, true, 1.0f, A, B, 0.0f, from_f32, low);
      kernels::gemm(false, true, 1.0f, ops::cast(A, low), ops::cast(B, low), 0.0f, from_low, low);
      const auto x = from_f32.to_vector(), y = from_low.to_vector();
      BOOST_TEST(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0,
                 fmt::format("{} {}x{}x{}", dtype_name(low), M, N, K));
    }
}

// gemm above runs the processor's preferred bfloat16 kernel; each kernel it could run instead is
// checked here on the packed operands, exactly: bfloat16 products are exact in float32 and the sums
// of small integers stay exact, whatever order a kernel adds them in.
BOOST_AUTO_TEST_CASE(every_bf16_kernel_multiplies_packed_operands_exactly) {
  namespace cpu = kernels::cpu;
  const auto kernels = cpu::bf16_kernels_available();
  if (kernels.empty()) {
    BOOST_TEST_MESSAGE("skipped: this processor has neither AMX nor AVX-512 BF16 (bfloat16 GEMMs widen to float32)");
    return;
  }
  Generator gen{3};
  for (const auto& [M, N, K] : std::vector<std::array<std::int64_t, 3>>{
           {1, 1, 1}, {8, 16, 32}, {17, 33, 65}, {40, 48, 7}, {64, 96, 200}, {33, 130, 511}}) {
    std::vector<float> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N));
    for (auto& v : a) v = static_cast<float>(static_cast<int>(gen.below(17)) - 8);
    for (auto& v : b) v = static_cast<float>(static_cast<int>(gen.below(17)) - 8);
    const cpu::Bf16A pa = cpu::pack_bf16_a(false, M, K, a.data(), DType::f32, K);
    const cpu::Bf16B pb = cpu::pack_bf16_b(false, K, N, b.data(), DType::f32, N);
    for (cpu::Bf16Kernel kernel : kernels) {
      std::vector<float> c(static_cast<std::size_t>(M * N), -1.0f);
      cpu::bf16_gemm(pa, pb, {.C = c.data(), .type = DType::f32, .ldc = N}, kernel);
      std::int64_t wrong = 0;
      for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (std::int64_t k = 0; k < K; ++k) s += double(a[i * K + k]) * double(b[k * N + j]);
          wrong += c[i * N + j] != static_cast<float>(s);
        }
      BOOST_TEST(wrong == 0, cpu::bf16_kernel_name(kernel) << " " << M << "x" << N << "x" << K << ": " << wrong
                                                              << " of " << M * N << " entries differ");
    }
  }
}

// linear under bfloat16 autocast adds its float32 bias as the product is written, before the one
// rounding of y: both ways the CPU multiplies (C^T = W x^T when the weight is the larger operand).
BOOST_AUTO_TEST_CASE(low_precision_linear_adds_the_bias_before_rounding_once) {
  for (const std::int64_t rows : {3, 64}) {
    const Tensor x = random_tensor({rows, 40}, 21), w = random_tensor({48, 40}, 22), b = random_tensor({48}, 23);
    Tensor y;
    {
      const AutocastGuard autocast{DType::bf16};
      y = ops::linear(x, w, b);
    }
    BOOST_REQUIRE(y.dtype() == DType::bf16);
    const auto round = [](float v) { return float_from_bf16_bits(bf16_bits_from_float(v)); };
    const auto xv = x.to_vector(), wv = w.to_vector(), bv = b.to_vector(), got = ops::cast(y, DType::f32).to_vector();
    std::int64_t off = 0;
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < 48; ++j) {
        double s = bv[j];
        for (std::int64_t k = 0; k < 40; ++k) s += double(round(xv[i * 40 + k])) * double(round(wv[j * 40 + k]));
        // One rounding of the float32 sum: within half a bfloat16 step of the exact value, and a
        // float32 summation's error besides.
        off += std::abs(got[i * 48 + j] - s) > std::abs(s) * 0.5 / 128 + 1e-5;
      }
    BOOST_TEST(off == 0, rows << " rows: " << off << " values further than one rounding from x W^T + b");
  }
}

// Where a product widens its operands to float32 (float16 always; bfloat16 on a processor without
// a bfloat16 kernel), the copies are the allocator's temporaries: a memory cap refuses them, and
// memory plans count the bytes the product takes (A's copy, B's unless it is a parameter whose
// rounded copy is kept, and a low-precision C's).
BOOST_AUTO_TEST_CASE(widened_operands_are_counted_temporaries_as_planned) {
  std::vector<DType> lows{DType::f16};
  if (kernels::cpu::bf16_kernels_available().empty())
    lows.push_back(DType::bf16);
  else
    BOOST_TEST_MESSAGE("bfloat16 multiplies packed operands on this processor: float16 alone is widened here");
  const std::int64_t M = 24, N = 40, K = 56;
  for (const DType low : lows)
    for (const DType out : {DType::f32, low}) {
      const std::string what = fmt::format("{} product into {}", dtype_name(low), dtype_name(out));
      const Tensor A = random_tensor({M, K}, 31), B = ops::cast(random_tensor({K, N}, 32), low);
      const Tensor C = Tensor::zeros({M, N}, {.dtype = out});
      const std::size_t planned =
          kernels::gemm_workspace_bytes(Device::cpu(), low, M, N, K, DType::f32, low, out, false);
      BOOST_TEST(planned == static_cast<std::size_t>(M * K + K * N + (out == DType::f32 ? 0 : M * N)) * 4, what);
      const std::size_t before = memory_stats().live_of(MemoryCategory::temporaries);
      reset_peak_memory();
      kernels::gemm(false, false, 1.0f, A, B, 0.0f, C, low);
      BOOST_TEST(memory_stats().peak_of(MemoryCategory::temporaries) - before == planned, what);

      Allocator& cpu = allocator(Device::cpu());
      cpu.set_limit(memory_stats().live_total + planned - 4);
      BOOST_CHECK_EXCEPTION(kernels::gemm(false, false, 1.0f, A, B, 0.0f, C, low), OutOfMemory,
                            accrue::test::message_has({"out of memory on cpu", "temporaries"}));
      cpu.set_limit(memory_stats().live_total + planned);
      kernels::gemm(false, false, 1.0f, A, B, 0.0f, C, low);
      cpu.set_limit(0);
    }
}
