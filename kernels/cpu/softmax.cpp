#include "accrue/kernels/common/softmax.hpp"

#include "accrue/kernels/cpu/parallel.hpp"
#include "accrue/kernels/cpu/softmax.hpp"

namespace accrue::kernels::cpu {

void softmax_forward(const float* x, float* y, std::int64_t outer, std::int64_t D, std::int64_t inner, bool log) {
  parallel_for(outer * inner, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(D, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t s = begin; s < end; ++s) {
                   const std::int64_t base = (s / inner) * D * inner + s % inner;
                   common::softmax_slice(x + base, y + base, D, inner, log);
                 }
               });
}

void softmax_backward(const float* y, const float* dy, float* dx, std::int64_t outer, std::int64_t D, std::int64_t inner,
                      bool log, bool accumulate) {
  parallel_for(outer * inner, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(D, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t s = begin; s < end; ++s) {
                   const std::int64_t base = (s / inner) * D * inner + s % inner;
                   common::softmax_slice_backward(y + base, dy + base, dx + base, D, inner, log, accumulate);
                 }
               });
}

}  // namespace accrue::kernels::cpu
