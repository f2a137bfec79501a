#include "accrue/kernels/common/dropout.hpp"
#include "accrue/kernels/common/half.hpp"

#include "accrue/kernels/cpu/parallel.hpp"
#include "accrue/kernels/cpu/dropout.hpp"

namespace accrue::kernels::cpu {

namespace {
template <class T>
void apply(const T* in, T* out, std::int64_t n, float p, std::uint64_t seed, std::uint64_t offset, bool accumulate) {
  const float scale = 1.0f / (1.0f - p);
  parallel_for(n, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const float v = common::load(in[i]) * common::dropout_factor(seed, offset, static_cast<std::uint64_t>(i), p, scale);
      out[i] = common::store<T>(accumulate ? common::load(out[i]) + v : v);
    }
  });
}
}  // namespace

void dropout_apply(DType dtype, const void* in, void* out, std::int64_t n, float p, std::uint64_t seed,
                   std::uint64_t offset, bool accumulate) {
  switch (dtype) {
    case DType::f32: return apply(static_cast<const float*>(in), static_cast<float*>(out), n, p, seed, offset, accumulate);
    case DType::bf16:
      return apply(static_cast<const bfloat16*>(in), static_cast<bfloat16*>(out), n, p, seed, offset, accumulate);
    case DType::f16:
      return apply(static_cast<const float16*>(in), static_cast<float16*>(out), n, p, seed, offset, accumulate);
    case DType::i32: break;
  }
}

}  // namespace accrue::kernels::cpu
