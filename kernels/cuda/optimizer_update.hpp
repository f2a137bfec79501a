#pragma once
// The CUDA backend's optimizer update (optimizer_update.cu) for any rule of
// common/optimizer_updates.hpp, called by kernels/optimizer_update.cpp with raw device pointers:
// every tensor of the list in few multi-tensor launches on `device`'s compute stream, returning
// without waiting. The backend exports it once per rule, under the rule's name (exports.cpp).
// Toolkit-free, so any file may include it.

#include <span>

#include "../common/optimizer_updates.hpp"

namespace accrue::kernels::cuda {

template <class Rule>
void optimizer_update(int device, std::span<const common::UpdateTensors<Rule::states>> tensors,
                      const typename Rule::Hyper& hyper);

}  // namespace accrue::kernels::cuda
