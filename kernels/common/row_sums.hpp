#pragma once
// How the CUDA backend sums few long rows (a whole-tensor sum or mean is one row): one block per
// row would leave all but one multiprocessor idle, so each row is split into chunks, one block
// each, whose partial sums a second kernel adds in order (the result does not depend on
// scheduling). Host-only planning, kept here so that CPU tests check the chunks cover every row.

#include <algorithm>
#include <cstdint>

namespace accrue::kernels::common {

struct RowSplit {
  std::int64_t chunks = 1;  // blocks per row
  std::int64_t chunk = 0;   // values per block (the last block of a row may take fewer)
};

/// Rows of `D` values, `outer` of them: a row splits while it is long (at least 2 x `min_chunk`
/// values) and the rows are too few to fill `target_blocks` blocks on their own.
inline RowSplit split_rows(std::int64_t outer, std::int64_t D, std::int64_t target_blocks = 1024,
                           std::int64_t min_chunk = 8192) {
  if (outer <= 0 || D < 2 * min_chunk || outer >= target_blocks) return {1, D};
  const std::int64_t chunks = std::min((D + min_chunk - 1) / min_chunk, std::max<std::int64_t>(1, target_blocks / outer));
  return {chunks, (D + chunks - 1) / chunks};
}

}  // namespace accrue::kernels::common
