#pragma once
// Optimizer updates as the CUDA backend's host functions (optimizer_update.cu), called by
// kernels/optimizer_update.cpp with raw device pointers: SGD, Adam/AdamW, RMSprop, Adagrad and Lion
// over many tensors in few launches, LARS and LAMB one tensor at a time. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>
#include <span>

#include "../common/optimizer_updates.hpp"

namespace accrue::kernels::cuda {

struct SgdPointers {
  float* param;
  const float* grad;
  float* momentum_buffer;
  std::int64_t n;
};
struct AdamPointers {
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  float* max_exp_avg_sq;
  std::int64_t n;
};
struct RmspropPointers {
  float* param;
  const float* grad;
  float* square_avg;
  float* grad_avg;
  float* momentum_buffer;
  std::int64_t n;
};
struct AdagradPointers {
  float* param;
  const float* grad;
  float* sum;
  std::int64_t n;
};
struct LionPointers {
  float* param;
  const float* grad;
  float* exp_avg;
  std::int64_t n;
};
struct AveragePointers {
  float* average;
  const float* param;
  std::int64_t n;
};
void sgd_update(int device, std::span<const SgdPointers> tensors, const common::SgdHyper& hyper);
void adam_update(int device, std::span<const AdamPointers> tensors, const common::AdamHyper& hyper);
void rmsprop_update(int device, std::span<const RmspropPointers> tensors, const common::RmspropHyper& hyper);
void adagrad_update(int device, std::span<const AdagradPointers> tensors, const common::AdagradHyper& hyper);
void lion_update(int device, std::span<const LionPointers> tensors, const common::LionHyper& hyper);
void average_update(int device, std::span<const AveragePointers> tensors, float decay, float one_minus_decay);
void lars_update(int device, float* param, const float* grad, float* momentum_buffer, std::int64_t n,
                 const common::LarsHyper& hyper);
void lamb_moments(int device, const float* param, const float* grad, float* exp_avg, float* exp_avg_sq, float* update,
                  std::int64_t n, const common::LambHyper& hyper);

}  // namespace accrue::kernels::cuda
