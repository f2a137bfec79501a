// SGD, Adam/AdamW, RMSprop, Adagrad and Lion over all parameters in few launches (multi_tensor.cuh),
// LARS and LAMB per tensor; the per-element math is common/optimizer_updates.hpp, as on the CPU.

#include "../common/optimizer_updates.hpp"
#include "launch.cuh"
#include "multi_tensor.cuh"
#include "optimizer_update.hpp"

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

template <bool Decay, bool Centered, bool Momentum>
__global__ void rmsprop_kernel(TensorTable<5> t, common::RmspropHyper h) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* p = static_cast<float*>(t.ptr[0][s]);
  const float* g = static_cast<const float*>(t.ptr[1][s]);
  float* sq = static_cast<float*>(t.ptr[2][s]);
  float* mean = static_cast<float*>(t.ptr[3][s]);
  float* buf = static_cast<float*>(t.ptr[4][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    common::rmsprop_update<Decay, Centered, Momentum>(p + i, g[i], sq + i, Centered ? mean + i : nullptr,
                                                      Momentum ? buf + i : nullptr, h);
}

template <bool Decay>
__global__ void adagrad_kernel(TensorTable<3> t, common::AdagradHyper h) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* p = static_cast<float*>(t.ptr[0][s]);
  const float* g = static_cast<const float*>(t.ptr[1][s]);
  float* sum = static_cast<float*>(t.ptr[2][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) common::adagrad_update<Decay>(p + i, g[i], sum + i, h);
}

template <bool Decay>
__global__ void lion_kernel(TensorTable<3> t, common::LionHyper h) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* p = static_cast<float*>(t.ptr[0][s]);
  const float* g = static_cast<const float*>(t.ptr[1][s]);
  float* m = static_cast<float*>(t.ptr[2][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) common::lion_update<Decay>(p + i, g[i], m + i, h);
}

__global__ void average_kernel(TensorTable<2> t, float decay, float one_minus_decay) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* a = static_cast<float*>(t.ptr[0][s]);
  const float* p = static_cast<const float*>(t.ptr[1][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) common::average_update(a + i, p[i], decay, one_minus_decay);
}

template <bool Momentum, bool Decay>
struct LarsStep {
  float* p;
  const float* g;
  float* v;
  common::LarsHyper h;
  __device__ void operator()(std::int64_t i) const {
    common::lars_update<Momentum, Decay>(p + i, g[i], Momentum ? v + i : nullptr, h);
  }
};

struct LambMoments {
  const float* p;
  const float* g;
  float* m;
  float* v;
  float* r;
  common::LambHyper h;
  __device__ void operator()(std::int64_t i) const { r[i] = common::lamb_moments(p[i], g[i], m + i, v + i, h); }
};

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

void rmsprop_update(int device, std::span<const RmspropPointers> tensors, const common::RmspropHyper& h) {
  std::vector<std::int64_t> sizes;
  std::vector<std::array<void*, 5>> pointers;
  for (const RmspropPointers& t : tensors) {
    sizes.push_back(t.n);
    pointers.push_back({t.param, const_cast<float*>(t.grad), t.square_avg, t.grad_avg, t.momentum_buffer});
  }
  const cudaStream_t stream = compute_stream(device);
  with_flag(h.weight_decay != 0.0f, [&](auto decay) {
    with_flag(h.centered, [&](auto centered) {
      with_flag(h.momentum != 0.0f, [&](auto momentum) {
        for_each_launch<5>(sizes, pointers, [&](const TensorTable<5>& table, unsigned blocks) {
          rmsprop_kernel<decay(), centered(), momentum()><<<blocks, multi_threads, 0, stream>>>(table, h);
          check_launch("rmsprop_kernel", __FILE__, __LINE__);
        });
      });
    });
  });
}

void adagrad_update(int device, std::span<const AdagradPointers> tensors, const common::AdagradHyper& h) {
  std::vector<std::int64_t> sizes;
  std::vector<std::array<void*, 3>> pointers;
  for (const AdagradPointers& t : tensors) {
    sizes.push_back(t.n);
    pointers.push_back({t.param, const_cast<float*>(t.grad), t.sum});
  }
  const cudaStream_t stream = compute_stream(device);
  with_flag(h.weight_decay != 0.0f, [&](auto decay) {
    for_each_launch<3>(sizes, pointers, [&](const TensorTable<3>& table, unsigned blocks) {
      adagrad_kernel<decay()><<<blocks, multi_threads, 0, stream>>>(table, h);
      check_launch("adagrad_kernel", __FILE__, __LINE__);
    });
  });
}

void lion_update(int device, std::span<const LionPointers> tensors, const common::LionHyper& h) {
  std::vector<std::int64_t> sizes;
  std::vector<std::array<void*, 3>> pointers;
  for (const LionPointers& t : tensors) {
    sizes.push_back(t.n);
    pointers.push_back({t.param, const_cast<float*>(t.grad), t.exp_avg});
  }
  const cudaStream_t stream = compute_stream(device);
  with_flag(h.decay_factor != 1.0f, [&](auto decay) {
    for_each_launch<3>(sizes, pointers, [&](const TensorTable<3>& table, unsigned blocks) {
      lion_kernel<decay()><<<blocks, multi_threads, 0, stream>>>(table, h);
      check_launch("lion_kernel", __FILE__, __LINE__);
    });
  });
}

void average_update(int device, std::span<const AveragePointers> tensors, float decay, float one_minus_decay) {
  std::vector<std::int64_t> sizes;
  std::vector<std::array<void*, 2>> pointers;
  for (const AveragePointers& t : tensors) {
    sizes.push_back(t.n);
    pointers.push_back({t.average, const_cast<float*>(t.param)});
  }
  const cudaStream_t stream = compute_stream(device);
  for_each_launch<2>(sizes, pointers, [&](const TensorTable<2>& table, unsigned blocks) {
    average_kernel<<<blocks, multi_threads, 0, stream>>>(table, decay, one_minus_decay);
    check_launch("average_kernel", __FILE__, __LINE__);
  });
}

void lars_update(int device, float* param, const float* grad, float* momentum_buffer, std::int64_t n,
                 const common::LarsHyper& h) {
  with_flag(h.momentum != 0.0f, [&](auto momentum) {
    with_flag(h.weight_decay != 0.0f, [&](auto decay) {
      launch_elementwise(device, n, "lars_update", LarsStep<momentum(), decay()>{param, grad, momentum_buffer, h});
    });
  });
}

void lamb_moments(int device, const float* param, const float* grad, float* exp_avg, float* exp_avg_sq, float* update,
                  std::int64_t n, const common::LambHyper& h) {
  launch_elementwise(device, n, "lamb_moments", LambMoments{param, grad, exp_avg, exp_avg_sq, update, h});
}

}  // namespace accrue::kernels::cuda
