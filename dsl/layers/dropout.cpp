#include "accrue/dsl/layers/dropout.hpp"

#include "accrue/framework/ops.hpp"

namespace accrue::layers {

Dropout::Dropout(float rate) : rate_(rate) {
  ACCRUE_CHECK(rate >= 0.0f && rate < 1.0f, "Dropout rate must be in [0, 1), got {}", rate);
}

Tensor Dropout::forward(const Tensor& x) { return ops::dropout(x, rate_, training(), &generator()); }

}  // namespace accrue::layers
