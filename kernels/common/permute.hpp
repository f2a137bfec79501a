#pragma once
// Index arithmetic of permute (and so transpose), written once for both backends: where element i
// of the permuted copy reads its input. Plain data built on the host (kernels/permute.cpp) and
// passed by value to GPU kernels.

#include <cstdint>

#include "../../framework/core/macros.hpp"

namespace accrue::kernels::common {

inline constexpr int permute_max_rank = 8;

/// y = x.permute(order) made contiguous: y's dimension d is x's dimension order[d], so walking y
/// row-major steps x by `stride[d]` (x's stride of that dimension) along y's dimension d.
struct PermuteIndex {
  int rank = 0;
  std::int64_t out[permute_max_rank] = {};
  std::int64_t stride[permute_max_rank] = {};

  /// The offset in x of y's element i.
  ACCRUE_HD std::int64_t source(std::int64_t i) const {
    std::int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      offset += (i % out[d]) * stride[d];
      i /= out[d];
    }
    return offset;
  }
};

}  // namespace accrue::kernels::common
