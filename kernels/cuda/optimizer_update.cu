// SGD and Adam/AdamW over all parameters in few launches (multi_tensor.cuh); the per-element math
// is common/optimizer_updates.hpp, as on the CPU.

#include "accrue/kernels/common/optimizer_updates.hpp"
#include "accrue/kernels/cuda/multi_tensor.cuh"
#include "accrue/kernels/cuda/optimizer_update.hpp"

namespace accrue::kernels::cuda {
namespace {

template <bool Momentum, bool Decay, bool Nesterov, bool Maximize, bool FirstStep>
__global__ void sgd_kernel(TensorTable<3> t, common::SgdHyper h) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* p = static_cast<float*>(t.ptr[0][s]);
  const float* g = static_cast<const float*>(t.ptr[1][s]);
  float* buf = static_cast<float*>(t.ptr[2][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    common::sgd_update<Momentum, Decay, Nesterov, Maximize, FirstStep>(p + i, g[i], Momentum ? buf + i : nullptr, h);
}

template <bool Decay, bool Decoupled, bool Amsgrad, bool Maximize>
__global__ void adam_kernel(TensorTable<5> t, common::AdamHyper h) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* p = static_cast<float*>(t.ptr[0][s]);
  const float* g = static_cast<const float*>(t.ptr[1][s]);
  float* m = static_cast<float*>(t.ptr[2][s]);
  float* v = static_cast<float*>(t.ptr[3][s]);
  float* vmax = static_cast<float*>(t.ptr[4][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    common::adam_update<Decay, Decoupled, Amsgrad, Maximize>(p + i, g[i], m + i, v + i, Amsgrad ? vmax + i : nullptr, h);
}

}  // namespace

void sgd_update(int device, std::span<const SgdPointers> tensors, const common::SgdHyper& h) {
  std::vector<std::int64_t> sizes;
  std::vector<std::array<void*, 3>> pointers;
  for (const SgdPointers& t : tensors) {
    sizes.push_back(t.n);
    pointers.push_back({t.param, const_cast<float*>(t.grad), t.momentum_buffer});
  }
  const cudaStream_t stream = compute_stream(device);
  with_flag(h.momentum != 0.0f, [&](auto momentum) {
    with_flag(h.weight_decay != 0.0f, [&](auto decay) {
      with_flag(h.nesterov, [&](auto nesterov) {
        with_flag(h.maximize, [&](auto maximize) {
          with_flag(h.first_step, [&](auto first) {
            for_each_launch<3>(sizes, pointers, [&](const TensorTable<3>& table, unsigned blocks) {
              sgd_kernel<momentum(), decay(), nesterov(), maximize(), first()><<<blocks, multi_threads, 0, stream>>>(table, h);
              check_launch("sgd_kernel", __FILE__, __LINE__);
            });
          });
        });
      });
    });
  });
}

void adam_update(int device, std::span<const AdamPointers> tensors, const common::AdamHyper& h) {
  std::vector<std::int64_t> sizes;
  std::vector<std::array<void*, 5>> pointers;
  for (const AdamPointers& t : tensors) {
    sizes.push_back(t.n);
    pointers.push_back({t.param, const_cast<float*>(t.grad), t.exp_avg, t.exp_avg_sq, t.max_exp_avg_sq});
  }
  const cudaStream_t stream = compute_stream(device);
  with_flag(h.weight_decay != 0.0f, [&](auto decay) {
    with_flag(h.decoupled, [&](auto decoupled) {
      with_flag(h.amsgrad, [&](auto amsgrad) {
        with_flag(h.maximize, [&](auto maximize) {
          for_each_launch<5>(sizes, pointers, [&](const TensorTable<5>& table, unsigned blocks) {
            adam_kernel<decay(), decoupled(), amsgrad(), maximize()><<<blocks, multi_threads, 0, stream>>>(table, h);
            check_launch("adam_kernel", __FILE__, __LINE__);
          });
        });
      });
    });
  });
}

}  // namespace accrue::kernels::cuda
