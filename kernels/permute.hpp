#pragma once
// The dimensions of a tensor reordered into a new contiguous tensor: the data movement of
// transpose and permute (attention's heads, batch_first sequences).

#include <span>

#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

/// y = x with its dimensions in `order` (y's dimension d is x's dimension order[d]), written into
/// the contiguous y of that shape; with `accumulate`, added into y (floating types). Any dtype.
void permute(const Tensor& x, const Tensor& y, std::span<const int> order, bool accumulate = false);

}  // namespace accrue::kernels
