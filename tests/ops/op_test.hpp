#pragma once
// What the op tests share (tests/ops/test_<op>.cpp, one per file of framework/ops/, built into one
// program, test_ops, with a test suite per op: `test_ops --run_test=conv`).

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "../test_util.hpp"

namespace accrue::test {

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// Checks f's gradients with respect to every input against central finite differences.
inline void expect_gradients(const std::string& name, const OpFn& f, const std::vector<Tensor>& inputs,
                             GradcheckOptions options = {}) {
  const GradcheckResult r = gradcheck(f, inputs, options);
  BOOST_CHECK_MESSAGE(r.ok, name << ": gradients differ from finite differences (max error " << r.max_abs_error << ")\n"
                                 << r.report);
}

/// expect_gradients of a unary op.
inline void expect_unary(const std::string& name, Tensor (*op)(const Tensor&), Tensor input) {
  expect_gradients(name, [op](const std::vector<Tensor>& in) { return op(in[0]); }, {leaf(std::move(input))});
}

inline double largest_difference(const std::vector<float>& got, const std::vector<float>& expected) {
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - expected[i]));
  return worst;
}

/// Values spaced `gap` apart in random order: every max window has a clear winner.
inline Tensor distinct_values(const Shape& shape, std::uint64_t seed, float gap = 0.05f) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  std::iota(v.begin(), v.end(), 0.0f);
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::shuffle(v.begin(), v.end(), rng);
  for (float& f : v) f = (f - static_cast<float>(v.size()) / 2) * gap;
  return Tensor::from(v, shape);
}

}  // namespace accrue::test

// The names every op test uses, brought in once.
using namespace accrue;
using namespace accrue::test;
