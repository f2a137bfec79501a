#pragma once
// Attention, as the CUDA backend's host functions (attention.cu): strided-batched cuBLAS GEMMs
// over the heads of each batch item and one thread per row of scores for the softmax, masks and
// dropout of common/attention.hpp. Called by kernels/attention.cpp with raw device pointers; each
// runs on `device`'s compute stream and returns without waiting. Toolkit-free, so any file may
// include it.

#include <cstdint>

#include "../common/attention.hpp"

namespace accrue::kernels::cuda {

/// scratch: every head's (T_q, T_k) scores, once in forward, twice in backward (three times with
/// dropout).
void attention_forward(int device, const common::AttentionGeometry& g, const float* q, const float* k, const float* v,
                       const float* mask, const std::int32_t* padding, float* out, float* scratch);
void attention_backward(int device, const common::AttentionGeometry& g, const float* q, const float* k, const float* v,
                        const float* mask, const std::int32_t* padding, const float* dout, float* dq, float* dk,
                        float* dv, bool accumulate_q, bool accumulate_k, bool accumulate_v, float* scratch);

}  // namespace accrue::kernels::cuda
