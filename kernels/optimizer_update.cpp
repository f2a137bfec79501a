#include "optimizer_update.hpp"

#include <vector>

#include "cpu/optimizer_update.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/optimizer_update.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {
namespace {

// A rule's Op is the one of its name.
Op op_named(std::string_view name) {
  for (Op op : all_ops())
    if (op_name(op) == name) return op;
  throw InternalError(fmt::format("internal error (a bug in Accrue): no Op is named {}", name));
}

// The slots' tensors as pointers of the backend's memory, after checking each slot's parameter,
// gradient and the states the step uses (float32 on `device`, the parameter's size) and marking
// what the rule writes as written; a state the step does not use is null.
template <class Rule>
std::vector<common::UpdateTensors<Rule::states>> checked_tensors(Device device,
                                                                  std::span<const UpdateSlot<Rule::states>> slots,
                                                                  const typename Rule::Hyper& hyper) {
  const auto needs = common::needed_states<Rule>(hyper);
  std::vector<common::UpdateTensors<Rule::states>> tensors;
  for (const UpdateSlot<Rule::states>& s : slots) {
    expect_tensors(Rule::name, device, DType::f32, {&s.param, &s.grad});
    ACCRUE_ASSERT(s.grad.numel() == s.param.numel());
    if (common::writes_param<Rule>()) s.param.bump_version();
    common::UpdateTensors<Rule::states> t{ptr<float>(s.param), ptr<float>(s.grad), {}, s.param.numel()};
    for (std::size_t k = 0; k < needs.size(); ++k) {
      t.state[k] = nullptr;
      if (!needs[k]) continue;
      expect_tensors(Rule::name, device, DType::f32, {&s.state[k]});
      ACCRUE_ASSERT(s.state[k].numel() == s.param.numel());
      s.state[k].bump_version();
      t.state[k] = ptr<float>(s.state[k]);
    }
    tensors.push_back(t);
  }
  return tensors;
}

}  // namespace

template <class Rule>
void optimizer_update(std::span<const UpdateSlot<Rule::states>> slots, const typename Rule::Hyper& hyper) {
  if (slots.empty()) return;
  static const Op op = op_named(Rule::name);
  const Device device = slots.front().param.device();
  const auto tensors = checked_tensors<Rule>(device, slots, hyper);
  return dispatch(
      op, device, DType::f32, [&] { cpu::optimizer_update<Rule>(tensors, hyper); },
      [&](int index) {
        // The backend exports each rule's body under the rule's name (cuda/exports.cpp).
        static const auto body = reinterpret_cast<decltype(&cuda::optimizer_update<Rule>)>(cuda::backend_function(Rule::name));
        body(index, tensors, hyper);
      });
}

#define ACCRUE_INSTANTIATE_UPDATE(Rule)                                                                 \
  template void optimizer_update<common::Rule>(std::span<const UpdateSlot<common::Rule::states>>,      \
                                               const common::Rule::Hyper&);
ACCRUE_OPTIMIZER_RULES(ACCRUE_INSTANTIATE_UPDATE)
#undef ACCRUE_INSTANTIATE_UPDATE

}  // namespace accrue::kernels
