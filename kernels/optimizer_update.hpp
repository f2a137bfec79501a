#pragma once
// The optimizer update: one step of a rule of common/optimizer_updates.hpp (SgdRule, AdamRule, ...)
// over every parameter of a group in one call: one pass per tensor on the CPU, a few multi-tensor
// launches for all of them on a GPU. LARS and LAMB are called one tensor at a time: each has its own
// trust ratio.

#include <array>
#include <span>

#include "../framework/core/tensor.hpp"
#include "common/optimizer_updates.hpp"

namespace accrue::kernels {

/// A parameter, its gradient and the rule's state tensors for it, in the order of the rule's
/// State; a state the step's options do not use (common::needed_states) may be undefined.
template <int States>
struct UpdateSlot {
  Tensor param, grad;
  std::array<Tensor, States> state;
};

/// One step of Rule over every slot: all float32 on one device, each state of the parameter's size.
template <class Rule>
void optimizer_update(std::span<const UpdateSlot<Rule::states>> slots, const typename Rule::Hyper& hyper);

/// One step of Rule over one tensor.
template <class Rule>
void optimizer_update(const UpdateSlot<Rule::states>& slot, const typename Rule::Hyper& hyper) {
  optimizer_update<Rule>(std::span<const UpdateSlot<Rule::states>>(&slot, 1), hyper);
}

}  // namespace accrue::kernels
