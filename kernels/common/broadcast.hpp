#pragma once
// Index arithmetic of NumPy broadcasting, written once for both backends: where element i of a
// broadcast result reads its operands, and which elements of dy a broadcast operand's gradient
// sums. The structs are plain data built on the host (broadcast_index.hpp makes them from shapes)
// and passed by value to GPU kernels.

#include <cstdint>

#include "../../framework/core/macros.hpp"

namespace accrue::kernels::common {

inline constexpr int broadcast_max_rank = 8;

/// out = f(a, b) with a and b broadcast to out's shape: an operand's stride is 0 along the
/// dimensions it is broadcast over. broadcast_index (broadcast_index.hpp) merges neighbouring dimensions both
/// operands step through alike (and drops those of extent 1), so that operands of one shape, or
/// a bias over rows, take one or two dimensions here rather than a division per dimension per
/// element on the GPU.
struct BroadcastIndex {
  int rank = 0;
  std::int64_t out[broadcast_max_rank] = {};
  std::int64_t stride_a[broadcast_max_rank] = {};
  std::int64_t stride_b[broadcast_max_rank] = {};

  /// Offsets in a and b of output element i (row-major).
  ACCRUE_HD void offsets(std::int64_t i, std::int64_t* oa, std::int64_t* ob) const {
    if (rank <= 1) {  // i is inside the one dimension: no division
      *oa = rank == 0 ? 0 : i * stride_a[0];
      *ob = rank == 0 ? 0 : i * stride_b[0];
      return;
    }
    std::int64_t a = 0, b = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const std::int64_t idx = i % out[d];
      i /= out[d];
      a += idx * stride_a[d];
      b += idx * stride_b[d];
    }
    *oa = a;
    *ob = b;
  }
};

/// d = sum of dy over the dimensions along which d's shape was broadcast to dy's. Element j of d
/// gathers dy[base(j) + reduced_offset(r)] for r in [0, reduced_count).
struct SumToShapeIndex {
  int kept_rank = 0;  // dimensions of dy that d keeps (extent > 1 in d), outermost first
  std::int64_t kept_extent[broadcast_max_rank] = {};
  std::int64_t kept_stride[broadcast_max_rank] = {};  // their strides in dy
  int reduced_rank = 0;  // dimensions of dy that d sums over
  std::int64_t reduced_extent[broadcast_max_rank] = {};
  std::int64_t reduced_stride[broadcast_max_rank] = {};
  std::int64_t reduced_count = 1;

  /// Offset in dy of element j of d with every summed index at 0.
  ACCRUE_HD std::int64_t base(std::int64_t j) const {
    std::int64_t off = 0;
    for (int d = kept_rank - 1; d >= 0; --d) {
      off += (j % kept_extent[d]) * kept_stride[d];
      j /= kept_extent[d];
    }
    return off;
  }
  /// Offset in dy of the r-th combination of summed indices.
  ACCRUE_HD std::int64_t reduced_offset(std::int64_t r) const {
    std::int64_t off = 0;
    for (int d = reduced_rank - 1; d >= 0; --d) {
      off += (r % reduced_extent[d]) * reduced_stride[d];
      r /= reduced_extent[d];
    }
    return off;
  }
};

}  // namespace accrue::kernels::common
