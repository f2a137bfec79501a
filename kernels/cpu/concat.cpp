#include "concat.hpp"

#include <cstring>
#include <type_traits>

#include "../../framework/core/half.hpp"
#include "parallel.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {

namespace {
template <class T>
void apply(const T* src, T* dst, std::int64_t rows, const common::ColumnBlock& b, bool accumulate) {
  parallel_for(rows, std::max<std::int64_t>(1, (1 << 14) / std::max<std::int64_t>(1, b.width)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t r = begin; r < end; ++r) {
                   const T* s = src + r * b.src_cols + b.src_offset;
                   T* d = dst + r * b.dst_cols + b.dst_offset;
                   if (!accumulate) {
                     std::memcpy(d, s, static_cast<std::size_t>(b.width) * sizeof(T));
                   } else {
                     for (std::int64_t c = 0; c < b.width; ++c) common::store_or_add(d[c], s[c], true);
                   }
                 }
               });
}
}  // namespace

void copy_columns(DType dtype, const void* src, void* dst, std::int64_t rows, const common::ColumnBlock& block,
                  bool accumulate) {
  switch (dtype) {
    case DType::f32:
      return apply(static_cast<const float*>(src), static_cast<float*>(dst), rows, block, accumulate);
    case DType::bf16:
      return apply(static_cast<const bfloat16*>(src), static_cast<bfloat16*>(dst), rows, block, accumulate);
    case DType::f16:
      return apply(static_cast<const float16*>(src), static_cast<float16*>(dst), rows, block, accumulate);
    case DType::i32:
      return apply(static_cast<const std::int32_t*>(src), static_cast<std::int32_t*>(dst), rows, block, accumulate);
  }
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
