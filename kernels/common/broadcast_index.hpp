#pragma once
// The broadcast index of two shapes (common/broadcast.hpp), made on the host for both backends'
// binary ops. Host code: it reads Shape, which device code does not see.

#include "../../framework/core/tensor.hpp"
#include "broadcast.hpp"

namespace accrue::kernels::common {

static_assert(Shape::max_rank == broadcast_max_rank);

/// Where a and b broadcast to `o` read their elements, with neighbouring dimensions that both step
/// through alike merged and dimensions of extent 1 dropped.
inline BroadcastIndex broadcast_index(const Shape& a, const Shape& b, const Shape& o) {
  // Innermost dimension first into `merged`, each joining the one inside it when both operands'
  // strides continue it (a broadcast operand's 0 continues a 0).
  BroadcastIndex merged;
  std::int64_t sa = 1, sb = 1;
  for (int i = o.rank() - 1; i >= 0; --i) {
    const int ia = a.rank() - o.rank() + i, ib = b.rank() - o.rank() + i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    const std::int64_t stride_a = da == 1 ? 0 : sa, stride_b = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
    if (o[i] == 1) continue;
    const int last = merged.rank - 1;
    if (last >= 0 && stride_a == merged.stride_a[last] * merged.out[last] &&
        stride_b == merged.stride_b[last] * merged.out[last]) {
      merged.out[last] *= o[i];
      continue;
    }
    merged.out[merged.rank] = o[i];
    merged.stride_a[merged.rank] = stride_a;
    merged.stride_b[merged.rank] = stride_b;
    ++merged.rank;
  }
  BroadcastIndex index;  // outermost first
  index.rank = merged.rank;
  for (int d = 0; d < merged.rank; ++d) {
    index.out[d] = merged.out[merged.rank - 1 - d];
    index.stride_a[d] = merged.stride_a[merged.rank - 1 - d];
    index.stride_b[d] = merged.stride_b[merged.rank - 1 - d];
  }
  return index;
}

}  // namespace accrue::kernels::common
