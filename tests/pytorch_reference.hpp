#pragma once
// Reading reference data that tests/data/*.py wrote with PyTorch (or scikit-learn): tensors stored as
// {"shape": [...], "values": [...]}, and comparisons that say where the worst difference is.

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_util.hpp"

namespace accrue::test {

/// tests/data/<name>, parsed; the test fails naming the file when it is missing.
inline nlohmann::json pytorch_reference(const std::string& name) {
  std::ifstream f(std::string(ACCRUE_TEST_DATA_DIR) + "/" + name);
  BOOST_REQUIRE_MESSAGE(f, "tests/data/" << name << " is missing");
  return nlohmann::json::parse(f);
}

/// A stored tensor, float32 or, with `dtype` int32, int32.
inline Tensor tensor_of(const nlohmann::json& j, DType dtype = DType::f32) {
  const std::vector<std::int64_t> dims = j["shape"].get<std::vector<std::int64_t>>();
  const Shape shape{std::span<const std::int64_t>(dims)};
  if (dtype == DType::i32) return Tensor::from(j["values"].get<std::vector<std::int32_t>>(), shape);
  return Tensor::from(j["values"].get<std::vector<float>>(), shape);
}

/// got equals the stored tensor within `tol`, relative to 1 + |PyTorch's value|.
inline void expect_close(const Tensor& got, const nlohmann::json& expected, const std::string& what,
                         double tol = 2e-5) {
  const Tensor e = tensor_of(expected);
  BOOST_REQUIRE_MESSAGE(got.shape() == e.shape(), what << ": shape " << got.shape() << ", PyTorch " << e.shape());
  const auto g = got.to_vector(), v = e.to_vector();
  double worst = 0.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double d = std::abs(double(g[i]) - v[i]) / (1.0 + std::abs(double(v[i])));
    if (d > worst) worst = d, at = i;
  }
  BOOST_CHECK_MESSAGE(worst <= tol, what << ": largest relative difference " << worst << " at element " << at << " ("
                                         << g[at] << " against PyTorch's " << v[at] << ")");
}

}  // namespace accrue::test
