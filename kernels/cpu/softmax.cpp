#include "../common/softmax.hpp"

#include "parallel.hpp"
#include "softmax.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {

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

void masked_softmax_forward(const float* x, const float* mask, float* y, std::int64_t rows, std::int64_t D,
                            std::int64_t T_q, float scale, bool causal) {
  parallel_for(rows, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(D, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t r = begin; r < end; ++r)
                   common::masked_softmax_row(x + r * D, mask != nullptr ? mask + (r % T_q) * D : nullptr, y + r * D, D,
                                              common::last_kept_entry(r, T_q, D, causal), scale);
               });
}

void masked_softmax_backward(const float* y, const float* dy, float* dx, std::int64_t rows, std::int64_t D, float scale,
                             bool accumulate) {
  parallel_for(rows, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(D, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t r = begin; r < end; ++r)
                   common::masked_softmax_row_backward(y + r * D, dy + r * D, dx + r * D, D, scale, accumulate);
               });
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
