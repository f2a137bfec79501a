#include "gather.hpp"

#include <cstring>

#include "../../framework/core/dtype.hpp"
#include "parallel.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {

void gather_rows(DType dtype, const void* table, const std::int32_t* indices, void* out, std::int64_t n,
                 std::int64_t D) {
  const std::size_t row = static_cast<std::size_t>(D) * dtype_size(dtype);
  const auto* from = static_cast<const unsigned char*>(table);
  auto* to = static_cast<unsigned char*>(out);
  parallel_for(n, std::max<std::int64_t>(1, (1 << 16) / std::max<std::int64_t>(1, D)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t i = begin; i < end; ++i)
                   std::memcpy(to + static_cast<std::size_t>(i) * row,
                               from + static_cast<std::size_t>(indices[i]) * row, row);
               });
}

// Threads split the columns, not the rows: two rows with one index then never race, and each
// column adds its rows in index order, the same on every run.
void scatter_add_rows(const float* grad, const std::int32_t* indices, float* table_grad, std::int64_t n, std::int64_t D,
                      std::int64_t skip) {
  parallel_for(D, std::max<std::int64_t>(16, D / 64), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (indices[i] == skip) continue;
      float* dst = table_grad + static_cast<std::int64_t>(indices[i]) * D;
      const float* src = grad + i * D;
      for (std::int64_t d = begin; d < end; ++d) dst[d] += src[d];
    }
  });
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
