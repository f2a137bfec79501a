// Unscaling the gradients of float16 loss scaling, and finding inf or NaN in them, over all
// gradients in few launches (multi_tensor.cuh); the per-element math is common/amp_update.hpp.

#include "../common/amp_update.hpp"
#include "amp_update.hpp"
#include "context.hpp"
#include "multi_tensor.cuh"

namespace accrue::kernels::cuda {
namespace {

__global__ void unscale_kernel(TensorTable<1> t, float inverse_scale, int* found) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* g = static_cast<float*>(t.ptr[0][s]);
  bool bad = false;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) bad = common::unscale_element(g + i, inverse_scale) || bad;
  // Every writer writes the same value, so the race is benign.
  if (bad) *found = 1;
}

}  // namespace

bool unscale_and_check(int device, std::span<float* const> tensors, std::span<const std::int64_t> sizes,
                       float inverse_scale, int* flag) {
  std::vector<std::array<void*, 1>> pointers;
  for (float* t : tensors) pointers.push_back({t});
  const cudaStream_t stream = compute_stream(device);
  launch_elementwise(device, 1, "unscale_and_check(init)", StoreInt{flag, 0});
  for_each_launch<1>(sizes, pointers, [&](const TensorTable<1>& table, unsigned n) {
    unscale_kernel<<<n, multi_threads, 0, stream>>>(table, inverse_scale, flag);
    check_launch("unscale_kernel", __FILE__, __LINE__);
  });
  int found = 0;
  copy_device_to_host(device, &found, flag, sizeof found);
  return found != 0;
}

}  // namespace accrue::kernels::cuda
