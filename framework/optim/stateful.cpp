#include "stateful.hpp"

namespace accrue::optim {

StatefulOptimizer::StatefulOptimizer(std::vector<Tensor> parameters, double lr, std::vector<std::string> names,
                                     float initial)
    : Optimizer(std::move(parameters), lr), names_(std::move(names)), initial_(initial) {
  slots_.resize(parameters_.size());
}

StatefulOptimizer::Slot& StatefulOptimizer::begin_step(std::size_t index) {
  Slot& s = slots_[index];
  if (s.step == 0) {
    const Tensor& param = parameters_[index];
    s.tensors.clear();
    for (std::size_t k = 0; k < names_.size(); ++k)
      s.tensors.push_back(
          Tensor::full(param.shape(), initial_, {.device = param.device(), .category = MemoryCategory::optimizer_state}));
  }
  ++s.step;
  return s;
}

void StatefulOptimizer::move_state_to(Device device) {
  for (Slot& s : slots_)
    for (Tensor& t : s.tensors) t.to_(device);
}

void StatefulOptimizer::save_state(OptimizerState& state) const {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.step == 0) continue;
    state.counters[fmt::format("{}.step", i)] = s.step;
    for (std::size_t k = 0; k < names_.size(); ++k)
      state.tensors.emplace_back(fmt::format("{}.{}", i, names_[k]), s.tensors[k]);
  }
}

void StatefulOptimizer::restore_state(const OptimizerState& state) {
  std::vector<std::string> problems, claimed;
  std::vector<Slot> saved(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const auto step = state.counters.find(fmt::format("{}.step", i));
    if (step == state.counters.end()) continue;  // not stepped yet: tensors of it are unexpected
    if (step->second < 1) {
      problems.push_back(fmt::format("'{}.step' is {}; a saved step count is at least 1", i, step->second));
      continue;
    }
    saved[i].step = step->second;
    for (const std::string& name : names_) {
      claimed.push_back(fmt::format("{}.{}", i, name));
      saved[i].tensors.push_back(check_state_tensor(state, claimed.back(), parameters_[i], true, problems));
    }
  }
  throw_state_problems(state, claimed, std::move(problems));
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    for (Tensor& t : saved[i].tensors) t = adopt_state_tensor(t, parameters_[i]);
    slots_[i] = std::move(saved[i]);
  }
}

}  // namespace accrue::optim
