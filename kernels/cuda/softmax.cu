// Attention's masked softmax on the GPU: one thread per row of scores, running the row functions
// of common/softmax.hpp that the CPU runs. Rows are a sequence's length (up to a few thousand), so
// a thread per row keeps the code shared; a block per row is the faster layout for long rows.

#include <cstdint>

#include "../common/softmax.hpp"
#include "launch.cuh"
#include "softmax.hpp"

namespace accrue::kernels::cuda {
namespace {

struct MaskedSoftmaxRows {
  const float* x;
  const float* mask;
  float* y;
  std::int64_t D, T_q;
  float scale;
  bool causal;
  __device__ void operator()(std::int64_t r) const {
    common::masked_softmax_row(x + r * D, mask != nullptr ? mask + (r % T_q) * D : nullptr, y + r * D, D,
                               common::last_kept_entry(r, T_q, D, causal), scale);
  }
};

struct MaskedSoftmaxRowsBackward {
  const float* y;
  const float* dy;
  float* dx;
  std::int64_t D;
  float scale;
  bool accumulate;
  __device__ void operator()(std::int64_t r) const {
    common::masked_softmax_row_backward(y + r * D, dy + r * D, dx + r * D, D, scale, accumulate);
  }
};

}  // namespace

void masked_softmax_forward(int device, const float* x, const float* mask, float* y, std::int64_t rows, std::int64_t D,
                            std::int64_t T_q, float scale, bool causal) {
  launch_elementwise(device, rows, "masked_softmax_forward", MaskedSoftmaxRows{x, mask, y, D, T_q, scale, causal});
}

void masked_softmax_backward(int device, const float* y, const float* dy, float* dx, std::int64_t rows, std::int64_t D,
                             float scale, bool accumulate) {
  launch_elementwise(device, rows, "masked_softmax_backward",
                     MaskedSoftmaxRowsBackward{y, dy, dx, D, scale, accumulate});
}

}  // namespace accrue::kernels::cuda
