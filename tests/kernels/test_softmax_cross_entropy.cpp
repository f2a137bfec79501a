// Softmax and the fused cross-entropy against double-precision formulas, with extreme logits.

#include "../test_util.hpp"

#include <cmath>

using namespace accrue;
using namespace accrue::test;

namespace {
std::vector<double> log_softmax_ref(const std::vector<float>& row) {
  double m = row[0];
  for (float v : row) m = std::max<double>(m, v);
  double s = 0;
  for (float v : row) s += std::exp(v - m);
  std::vector<double> out;
  for (float v : row) out.push_back(v - m - std::log(s));
  return out;
}
}  // namespace

BOOST_AUTO_TEST_CASE(softmax_rows_sum_to_one) {
  const Tensor x = random_tensor({5, 7}, 1, -4, 4);
  const auto y = ops::softmax(x).to_vector();
  for (int r = 0; r < 5; ++r) {
    double s = 0;
    for (int j = 0; j < 7; ++j) s += y[r * 7 + j];
    BOOST_TEST(s == 1.0, boost::test_tools::tolerance(1e-6));
  }
  const auto ls = ops::log_softmax(x).to_vector();
  const auto xv = x.to_vector();
  for (int r = 0; r < 5; ++r) {
    const auto ref = log_softmax_ref({xv.begin() + r * 7, xv.begin() + r * 7 + 7});
    for (int j = 0; j < 7; ++j) BOOST_TEST(ls[r * 7 + j] == ref[j], boost::test_tools::tolerance(1e-5));
  }
}

BOOST_AUTO_TEST_CASE(cross_entropy_matches_formula_and_is_stable) {
  // Huge logits: a naive exp would overflow; the fused op subtracts the row maximum.
  const Tensor logits = Tensor::from({1000.0f, 0.0f, -1000.0f, 1.0f, 2.0f, 3.0f, -50.0f, 50.0f, 0.0f}, {3, 3});
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{0, 2, 0}, {3});
  const auto loss = ops::cross_entropy(logits, labels, Reduction::none).to_vector();
  const auto lv = logits.to_vector();
  const std::vector<int> y = {0, 2, 0};
  for (int r = 0; r < 3; ++r) {
    const auto ref = log_softmax_ref({lv.begin() + r * 3, lv.begin() + r * 3 + 3});
    BOOST_TEST(std::isfinite(loss[r]));
    BOOST_TEST(loss[r] == -ref[y[r]], boost::test_tools::tolerance(1e-5));
  }
  const float mean = ops::cross_entropy(logits, labels).item();
  BOOST_TEST(mean == (loss[0] + loss[1] + loss[2]) / 3, boost::test_tools::tolerance(1e-6f));
  const float total = ops::cross_entropy(logits, labels, Reduction::sum).item();
  BOOST_TEST(total == loss[0] + loss[1] + loss[2], boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(label_smoothing_matches_pytorch_definition) {
  // PyTorch: (1 - eps) * nll + eps * mean over classes of -log p.
  const Tensor logits = random_tensor({4, 6}, 3, -2, 2);
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{1, 5, 0, 3}, {4});
  const auto got = ops::cross_entropy(logits, labels, Reduction::none, 0.2f).to_vector();
  const auto lv = logits.to_vector();
  for (int r = 0; r < 4; ++r) {
    const auto lp = log_softmax_ref({lv.begin() + r * 6, lv.begin() + r * 6 + 6});
    double uniform = 0;
    for (double v : lp) uniform -= v / 6;
    const double expected = 0.8 * -lp[labels.to_vector<std::int32_t>()[r]] + 0.2 * uniform;
    BOOST_TEST(got[r] == expected, boost::test_tools::tolerance(1e-5));
  }
}

BOOST_AUTO_TEST_CASE(bad_labels_and_shapes_are_named) {
  const Tensor logits = Tensor::zeros({3, 10});
  BOOST_CHECK_EXCEPTION(ops::cross_entropy(logits, Tensor::from(std::vector<std::int32_t>{1, 12, 3}, {3})), ValueError,
                        message_has({"label 12", "sample 1", "[0, 10)"}));
  BOOST_CHECK_EXCEPTION(ops::cross_entropy(logits, Tensor::from(std::vector<std::int32_t>{-1, 0, 0}, {3})), ValueError,
                        message_has({"label -1", "sample 0"}));
  BOOST_CHECK_EXCEPTION(ops::cross_entropy(logits, Tensor::from(std::vector<std::int32_t>{1, 2}, {2})), ShapeError,
                        message_has({"(2,)", "(3, 10)"}));
  BOOST_CHECK_EXCEPTION(ops::cross_entropy(logits, Tensor::zeros({3})), ValueError, message_has({"int32"}));
}
