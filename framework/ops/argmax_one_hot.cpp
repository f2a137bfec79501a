// The ops without a gradient that metrics and losses use on class scores and labels: argmax of
// each row, and labels as one-hot rows.

#include "ops.hpp"
#include "../../kernels/reduce.hpp"

namespace accrue::ops {

Tensor argmax(const Tensor& x_in) {
  ACCRUE_CHECK(x_in.defined() && is_floating(x_in.dtype()), "argmax: expects a floating-point tensor");
  const Tensor x = float32(x_in);
  ACCRUE_CHECK_SHAPE(x.rank() == 2 && x.size(1) > 0, "argmax: expects (rows, classes) with classes > 0, got {}",
                     x.shape());
  Tensor out = Tensor::empty({x.size(0)}, {.dtype = DType::i32, .device = x.device()});
  kernels::argmax_rows(x, out);
  return out;
}

Tensor one_hot(const Tensor& labels, std::int64_t classes) {
  ACCRUE_CHECK(labels.defined() && labels.dtype() == DType::i32, "one_hot: expects int32 labels");
  ACCRUE_CHECK(classes > 0, "one_hot: needs a positive number of classes, got {}", classes);
  const std::vector<std::int32_t> y = labels.to_vector<std::int32_t>();
  std::vector<float> values(y.size() * static_cast<std::size_t>(classes), 0.0f);
  for (std::size_t i = 0; i < y.size(); ++i) {
    ACCRUE_CHECK(y[i] >= 0 && y[i] < classes, "one_hot: label {} at index {} is outside [0, {})", y[i], i, classes);
    values[i * static_cast<std::size_t>(classes) + static_cast<std::size_t>(y[i])] = 1.0f;
  }
  Shape s = labels.shape();
  s.push_back(classes);
  return Tensor::from(values, s, {.device = labels.device()});
}

}  // namespace accrue::ops
