#pragma once
// Blocks of columns copied between row-major matrices: the data movement of concatenation and
// slicing along any dimension (a tensor seen as (outer, size along the dimension x inner)).

#include <cstdint>

#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

/// dst[r, dst_offset + c] (+)= src[r, src_offset + c] for r < rows and c < width, where src holds
/// rows of src_cols elements and dst rows of dst_cols, of one dtype (accumulate: floating types).
void copy_columns(const Tensor& src, std::int64_t src_cols, std::int64_t src_offset, const Tensor& dst,
                  std::int64_t dst_cols, std::int64_t dst_offset, std::int64_t rows, std::int64_t width,
                  bool accumulate = false);

}  // namespace accrue::kernels
