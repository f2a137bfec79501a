#pragma once
// Attention on the CPU (attention.cpp), called by kernels/attention.cpp: heads split over the
// thread pool, each thread computing one head at a time in its own slice of `scratch`.

#include <cstdint>

#include "../common/attention.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

/// Threads attention runs on for `g`: the scratch holds this many heads' buffers.
ACCRUE_CPU_KERNEL(attention_threads, int(const common::AttentionGeometry& g));

ACCRUE_CPU_KERNEL(attention_forward,
                  void(const common::AttentionGeometry& g, const float* q, const float* k, const float* v,
                       const float* mask, const std::int32_t* padding, float* out, float* scratch));
/// dq, dk or dv null: not computed.
ACCRUE_CPU_KERNEL(attention_backward,
                  void(const common::AttentionGeometry& g, const float* q, const float* k, const float* v,
                       const float* mask, const std::int32_t* padding, const float* dout, float* dq, float* dk,
                       float* dv, bool accumulate_q, bool accumulate_k, bool accumulate_v, float* scratch));

}  // namespace accrue::kernels::cpu
