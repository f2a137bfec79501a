#pragma once
// Index arithmetic of copy_columns, written once for both backends.

#include <cstdint>

#include "../../framework/core/macros.hpp"

namespace accrue::kernels::common {

/// Element e of the width-wide block (row e / width, column e % width) in src and in dst.
struct ColumnBlock {
  std::int64_t src_cols, src_offset, dst_cols, dst_offset, width;
  ACCRUE_HD std::int64_t src(std::int64_t e) const { return (e / width) * src_cols + src_offset + e % width; }
  ACCRUE_HD std::int64_t dst(std::int64_t e) const { return (e / width) * dst_cols + dst_offset + e % width; }
};

}  // namespace accrue::kernels::common
