#pragma once
// The CPU backend's optimizer update over raw host memory, for any rule of
// common/optimizer_updates.hpp; called by kernels/optimizer_update.cpp, defined (and instantiated
// for every rule) in kernels/cpu/optimizer_update.cpp.

#include <span>

#include "../common/optimizer_updates.hpp"
#include "variant.hpp"

namespace accrue::kernels::cpu {

/// One step of Rule over each of `tensors`, one parallel pass per tensor.
ACCRUE_CPU_KERNEL_TEMPLATE(optimizer_update, Rule, void,
                           (std::span<const common::UpdateTensors<Rule::states>> tensors,
                            const typename Rule::Hyper& hyper));

}  // namespace accrue::kernels::cpu
