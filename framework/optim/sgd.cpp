#include "sgd.hpp"

#include <cmath>

#include "../../kernels/optimizer_update.hpp"
#include "options_struct.hpp"

namespace accrue::optim {

void SGD::validate() const {
  check_options("SGD", {{"lr", lr, OptionRange::learning_rate}, {"momentum", momentum, OptionRange::at_least_zero},
                        {"weight_decay", weight_decay, OptionRange::at_least_zero}});
  ACCRUE_CHECK(!nesterov || (momentum > 0.0 && dampening == 0.0),
               "SGD: nesterov momentum needs momentum > 0 and dampening = 0 (got momentum={}, dampening={})", momentum,
               dampening);
}

std::unique_ptr<Optimizer> SGD::create(std::vector<Tensor> parameters) const {
  return make_optimizer<SgdOptimizer>(*this, std::move(parameters));
}

std::string SGD::str() const {
  const SGD d;
  return options_str("SGD", lr, {{"momentum", momentum, d.momentum}, {"dampening", dampening, d.dampening},
                                 {"weight_decay", weight_decay, d.weight_decay}, {"nesterov", nesterov, d.nesterov},
                                 {"maximize", maximize, d.maximize}});
}

SgdOptimizer::SgdOptimizer(std::vector<Tensor> parameters, const SGD& config)
    : ConfiguredOptimizer(std::move(parameters), config) {
  config_.validate();
  buffers_.resize(parameters_.size());
}

void SgdOptimizer::update(std::size_t index, const Tensor& param, const Tensor& grad) {
  const bool first = begin_step(index);
  kernels::optimizer_update<kernels::common::SgdRule>({param, grad, {buffers_[index]}}, hyper(first));
}

void SgdOptimizer::update_all(const std::vector<std::size_t>& indices) {
  // A parameter's first step with momentum starts its buffer from the gradient: its own group.
  std::vector<kernels::UpdateSlot<1>> first, later;
  for (std::size_t i : indices)
    (begin_step(i) ? first : later).push_back({parameters_[i], parameters_[i].grad(), {buffers_[i]}});
  kernels::optimizer_update<kernels::common::SgdRule>(first, hyper(true));
  kernels::optimizer_update<kernels::common::SgdRule>(later, hyper(false));
}

bool SgdOptimizer::begin_step(std::size_t index) {
  if (config_.momentum == 0.0 || buffers_[index].defined()) return false;
  const Tensor& param = parameters_[index];
  buffers_[index] = Tensor::empty(param.shape(), {.device = param.device(), .category = MemoryCategory::optimizer_state});
  return true;
}

void SgdOptimizer::move_state_to(Device device) {
  for (Tensor& b : buffers_)
    if (b.defined()) b.to_(device);
}

void SgdOptimizer::save_state(OptimizerState& state) const {
  for (std::size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].defined()) state.tensors.emplace_back(fmt::format("{}.momentum_buffer", i), buffers_[i]);
}

void SgdOptimizer::restore_state(const OptimizerState& state) {
  std::vector<std::string> problems, claimed;
  std::vector<Tensor> saved(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const std::string name = fmt::format("{}.momentum_buffer", i);
    claimed.push_back(name);
    saved[i] = check_state_tensor(state, name, parameters_[i], false, problems);
    if (saved[i].defined() && config_.momentum == 0.0)
      problems.push_back(fmt::format("'{}' is a momentum buffer, but this SGD has no momentum", name));
  }
  throw_state_problems(state, claimed, std::move(problems));
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    buffers_[i] = saved[i].defined() ? adopt_state_tensor(saved[i], parameters_[i]) : Tensor();
}

kernels::common::SgdRule::Hyper SgdOptimizer::hyper(bool first_step) const {
  return kernels::common::SgdRule::Hyper{static_cast<float>(lr_),
                                   static_cast<float>(config_.momentum),
                                   static_cast<float>(config_.dampening),
                                   static_cast<float>(config_.weight_decay),
                                   config_.nesterov,
                                   config_.maximize,
                                   first_step};
}

}  // namespace accrue::optim
