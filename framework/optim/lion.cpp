#include "lion.hpp"

#include <cmath>

#include "../../kernels/optimizer_update.hpp"
#include "options_struct.hpp"

namespace accrue::optim {

void Lion::validate() const {
  check_options("Lion", {{"lr", lr, OptionRange::learning_rate}, {"betas[0]", betas[0], OptionRange::below_one},
                         {"betas[1]", betas[1], OptionRange::below_one},
                         {"weight_decay", weight_decay, OptionRange::at_least_zero}});
}

std::unique_ptr<Optimizer> Lion::create(std::vector<Tensor> parameters) const {
  return make_optimizer<LionOptimizer>(*this, std::move(parameters));
}

std::string Lion::str() const {
  const Lion d;
  return options_str("Lion", lr, {{"betas", betas, d.betas}, {"weight_decay", weight_decay, d.weight_decay}});
}

LionOptimizer::LionOptimizer(std::vector<Tensor> parameters, const Lion& config)
    : ConfiguredOptimizer(std::move(parameters), config, std::vector<std::string>{"exp_avg"}) {}

void LionOptimizer::update(std::size_t index, const Tensor&, const Tensor&) { update_all({index}); }

void LionOptimizer::update_all(const std::vector<std::size_t>& indices) {
  std::vector<kernels::UpdateSlot<1>> slots;
  for (std::size_t i : indices) slots.push_back({parameters_[i], parameters_[i].grad(), {begin_step(i).tensors[0]}});
  const auto& b = config_.betas;
  kernels::optimizer_update<kernels::common::LionRule>(
      slots, {.lr = static_cast<float>(lr_),
              .beta1 = static_cast<float>(b[0]),
              .one_minus_beta1 = static_cast<float>(1.0 - b[0]),
              .beta2 = static_cast<float>(b[1]),
              .one_minus_beta2 = static_cast<float>(1.0 - b[1]),
              .decay_factor = static_cast<float>(1.0 - lr_ * config_.weight_decay)});
}

}  // namespace accrue::optim
