#include "rmsprop.hpp"

#include <cmath>
#include <map>

#include "../../kernels/optimizer_update.hpp"
#include "options_struct.hpp"

namespace accrue::optim {
namespace {

std::vector<std::string> rmsprop_state_names(const RMSprop& c) {
  std::vector<std::string> names{"square_avg"};
  if (c.momentum != 0.0) names.emplace_back("momentum_buffer");
  if (c.centered) names.emplace_back("grad_avg");
  return names;
}

}  // namespace

void RMSprop::validate() const {
  check_options("RMSprop", {{"lr", lr, OptionRange::learning_rate}, {"alpha", alpha, OptionRange::up_to_one},
                            {"eps", eps, OptionRange::at_least_zero},
                            {"weight_decay", weight_decay, OptionRange::at_least_zero},
                            {"momentum", momentum, OptionRange::at_least_zero}});
}

std::unique_ptr<Optimizer> RMSprop::create(std::vector<Tensor> parameters) const {
  return make_optimizer<RmspropOptimizer>(*this, std::move(parameters));
}

std::string RMSprop::str() const {
  const RMSprop d;
  return options_str("RMSprop", lr,
                     {{"alpha", alpha, d.alpha}, {"eps", eps, d.eps}, {"weight_decay", weight_decay, d.weight_decay},
                      {"momentum", momentum, d.momentum}, {"centered", centered, d.centered}});
}

void Adagrad::validate() const {
  check_options("Adagrad", {{"lr", lr, OptionRange::learning_rate}, {"lr_decay", lr_decay, OptionRange::at_least_zero},
                            {"weight_decay", weight_decay, OptionRange::at_least_zero},
                            {"initial_accumulator_value", initial_accumulator_value, OptionRange::at_least_zero},
                            {"eps", eps, OptionRange::at_least_zero}});
}

std::unique_ptr<Optimizer> Adagrad::create(std::vector<Tensor> parameters) const {
  return make_optimizer<AdagradOptimizer>(*this, std::move(parameters));
}

std::string Adagrad::str() const {
  const Adagrad d;
  return options_str("Adagrad", lr,
                     {{"lr_decay", lr_decay, d.lr_decay}, {"weight_decay", weight_decay, d.weight_decay},
                      {"initial_accumulator_value", initial_accumulator_value, d.initial_accumulator_value},
                      {"eps", eps, d.eps}});
}

RmspropOptimizer::RmspropOptimizer(std::vector<Tensor> parameters, const RMSprop& config)
    : ConfiguredOptimizer(std::move(parameters), config, rmsprop_state_names(config)) {}

void RmspropOptimizer::update(std::size_t index, const Tensor&, const Tensor&) { update_all({index}); }

void RmspropOptimizer::update_all(const std::vector<std::size_t>& indices) {
  const bool momentum = config_.momentum != 0.0;
  std::vector<kernels::UpdateSlot<3>> slots;
  for (std::size_t i : indices) {
    const Slot& s = begin_step(i);
    slots.push_back({parameters_[i], parameters_[i].grad(),
                     {s.tensors[0], config_.centered ? s.tensors.back() : Tensor(), momentum ? s.tensors[1] : Tensor()}});
  }
  kernels::optimizer_update<kernels::common::RmspropRule>(slots, {.lr = static_cast<float>(lr_),
                                                                  .alpha = static_cast<float>(config_.alpha),
                                                                  .one_minus_alpha = static_cast<float>(1.0 - config_.alpha),
                                                                  .eps = static_cast<float>(config_.eps),
                                                                  .weight_decay = static_cast<float>(config_.weight_decay),
                                                                  .momentum = static_cast<float>(config_.momentum),
                                                                  .centered = config_.centered});
}

AdagradOptimizer::AdagradOptimizer(std::vector<Tensor> parameters, const Adagrad& config)
    : ConfiguredOptimizer(std::move(parameters), config, std::vector<std::string>{"sum"},
                          static_cast<float>(config.initial_accumulator_value)) {}

void AdagradOptimizer::update(std::size_t index, const Tensor&, const Tensor&) { update_all({index}); }

void AdagradOptimizer::update_all(const std::vector<std::size_t>& indices) {
  // The decayed rate depends on each parameter's own step count: one group per count.
  std::map<std::int64_t, std::vector<kernels::UpdateSlot<1>>> groups;
  for (std::size_t i : indices) {
    const Slot& s = begin_step(i);
    groups[s.step].push_back({parameters_[i], parameters_[i].grad(), {s.tensors[0]}});
  }
  for (const auto& [step, slots] : groups) {
    const double clr = lr_ / (1.0 + static_cast<double>(step - 1) * config_.lr_decay);
    kernels::optimizer_update<kernels::common::AdagradRule>(slots, {.clr = static_cast<float>(clr),
                                                                    .eps = static_cast<float>(config_.eps),
                                                                    .weight_decay = static_cast<float>(config_.weight_decay)});
  }
}

}  // namespace accrue::optim
