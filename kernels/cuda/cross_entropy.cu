// Fused softmax cross-entropy on the GPU: one block per row finds the maximum, the sum of
// exponentials and (with label smoothing) the sum of logits in parallel, then finishes with the
// shared formula of common/cross_entropy.hpp; backward is element-wise.

#include <climits>

#include "../common/cross_entropy.hpp"
#include "launch.cuh"
#include "cross_entropy.hpp"
#include "context.hpp"

namespace accrue::kernels::cuda {
namespace {

constexpr int row_threads = 128;

struct FindBadLabel {
  const std::int32_t* labels;
  std::int64_t C, ignore;
  int* first;
  __device__ void operator()(std::int64_t b) const {
    if ((labels[b] < 0 || labels[b] >= C) && labels[b] != ignore) atomicMin(first, static_cast<int>(b));
  }
};

__global__ void cross_entropy_forward_kernel(const float* logits, const std::int32_t* labels, std::int64_t C,
                                             float smoothing, std::int64_t ignore, float* loss, float* lse) {
  const std::int64_t b = blockIdx.x;
  if (labels[b] == ignore) {
    if (threadIdx.x == 0) loss[b] = lse[b] = 0.0f;
    return;
  }
  const float* x = logits + b * C;
  float m = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, x[j]);
  m = block_all_reduce(m, -INFINITY, MaxOp{});
  float row_lse = m;
  // As common::row_logsumexp: an infinite or NaN maximum makes the loss non-finite anyway.
  if (m - m == 0.0f) {
    float s = 0.0f;
    for (std::int64_t j = threadIdx.x; j < C; j += blockDim.x) s += expf(x[j] - m);
    s = block_all_reduce(s, 0.0f, SumOp{});
    row_lse = m + logf(s);
  }
  float sum_x = 0.0f;
  if (smoothing != 0.0f) {
    for (std::int64_t j = threadIdx.x; j < C; j += blockDim.x) sum_x += x[j];
    sum_x = block_all_reduce(sum_x, 0.0f, SumOp{});
  }
  if (threadIdx.x == 0) {
    lse[b] = row_lse;
    loss[b] = common::cross_entropy_loss(row_lse, x[labels[b]], sum_x, C, smoothing);
  }
}

struct CrossEntropyBackward {
  const float* logits;
  const std::int32_t* labels;
  std::int64_t C, ignore;
  float smoothing;
  const float* lse;
  const float* g;
  float* dlogits;
  bool accumulate;
  __device__ void operator()(std::int64_t i) const {
    const std::int64_t b = i / C, j = i % C;
    const float d =
        labels[b] == ignore ? 0.0f : g[b] * common::cross_entropy_grad(logits[i], lse[b], j == labels[b], C, smoothing);
    dlogits[i] = accumulate ? dlogits[i] + d : d;
  }
};

}  // namespace

std::int64_t first_out_of_range(int device, const std::int32_t* labels, std::int64_t B, std::int64_t C, int* scratch,
                                std::int64_t ignore) {
  launch_elementwise(device, 1, "first_out_of_range(init)", StoreInt{scratch, INT_MAX});
  launch_elementwise(device, B, "first_out_of_range", FindBadLabel{labels, C, ignore, scratch});
  int first = INT_MAX;
  copy_device_to_host(device, &first, scratch, sizeof first);
  return first == INT_MAX ? -1 : first;
}

void cross_entropy_forward(int device, const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C,
                           float smoothing, std::int64_t ignore, float* loss, float* lse) {
  if (B == 0) return;
  cross_entropy_forward_kernel<<<grid_size(B, "cross_entropy: more than 2^31 - 1 rows"), row_threads, 0, compute_stream(device)>>>(logits, labels, C,
                                                                                                     smoothing, ignore, loss, lse);
  check_launch("cross_entropy_forward_kernel", __FILE__, __LINE__);
}

void cross_entropy_backward(int device, const float* logits, const std::int32_t* labels, std::int64_t B,
                            std::int64_t C, float smoothing, std::int64_t ignore, const float* lse, const float* g,
                            float* dlogits, bool accumulate) {
  launch_elementwise(device, B * C, "cross_entropy_backward",
                     CrossEntropyBackward{logits, labels, C, ignore, smoothing, lse, g, dlogits, accumulate});
}

}  // namespace accrue::kernels::cuda
