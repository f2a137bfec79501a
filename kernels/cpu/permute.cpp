#include "permute.hpp"

#include "../../framework/core/half.hpp"
#include "parallel.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {

namespace {
template <class T>
void apply(const T* x, T* y, std::int64_t n, const common::PermuteIndex& index, bool accumulate) {
  parallel_for(n, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      common::store_or_add(y[i], x[index.source(i)], accumulate);
    }
  });
}
}  // namespace

void permute(DType dtype, const void* x, void* y, std::int64_t n, const common::PermuteIndex& index, bool accumulate) {
  switch (dtype) {
    case DType::f32:
      return apply(static_cast<const float*>(x), static_cast<float*>(y), n, index, accumulate);
    case DType::bf16:
      return apply(static_cast<const bfloat16*>(x), static_cast<bfloat16*>(y), n, index, accumulate);
    case DType::f16:
      return apply(static_cast<const float16*>(x), static_cast<float16*>(y), n, index, accumulate);
    case DType::i32:
      return apply(static_cast<const std::int32_t*>(x), static_cast<std::int32_t*>(y), n, index, accumulate);
  }
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
