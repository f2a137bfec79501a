#pragma once
// SGD and Adam/AdamW updates over many tensors in few launches, as the CUDA backend's host functions (optimizer_update.cu), called by kernels/optimizer_update.cpp
// with raw device pointers. Each runs on `device`'s compute stream and returns without waiting,
// except where it says it waits. Toolkit-free, so any file may include it.

#include <cstdint>
#include <span>

#include "accrue/kernels/common/optimizer_updates.hpp"

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
void sgd_update(int device, std::span<const SgdPointers> tensors, const common::SgdHyper& hyper);
void adam_update(int device, std::span<const AdamPointers> tensors, const common::AdamHyper& hyper);

}  // namespace accrue::kernels::cuda
