#pragma once
// A tensor seen as (outer, D, inner) around one dimension: how reductions and softmax address it.

#include <cstdint>

#include "../core/shape.hpp"

namespace accrue::ops {

struct DimSplit {
  std::int64_t outer = 1, D = 1, inner = 1;
};

/// The split of `s` around dimension `dim` (already normalized).
inline DimSplit split_at(const Shape& s, int dim) {
  DimSplit p;
  for (int i = 0; i < s.rank(); ++i) {
    if (i < dim) p.outer *= s[i];
    else if (i == dim) p.D = s[i];
    else p.inner *= s[i];
  }
  return p;
}

}  // namespace accrue::ops
