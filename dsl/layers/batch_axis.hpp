#pragma once
// An axis as Keras counts it, on the batch tensor, for the layers that take one (Concatenate, Slice).

#include <fmt/ranges.h>

#include "../../framework/core/error.hpp"
#include "../../framework/core/shape.hpp"

namespace accrue::detail {

/// `axis` of batches of samples of `sample` (-1 the last, 1 the first after the batch), from 1;
/// throws ShapeError naming `layer` ("Slice{.axis = 0}") and `what` it does along it.
inline int batch_axis(int axis, const Shape& sample, const std::string& layer, const char* what) {
  const int rank = sample.rank() + 1;  // with the batch
  const int at = axis < 0 ? axis + rank : axis;
  ACCRUE_CHECK_SHAPE(at >= 1 && at < rank,
                     "{} {} an axis of its inputs' batches (batch, {}): 1 to {} or -1 to -{} (0 is the batch)", layer,
                     what, fmt::join(sample.dims(), ", "), rank - 1, rank - 1);
  return at;
}

}  // namespace accrue::detail
