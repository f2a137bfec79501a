#include "rmsprop.hpp"

#include <cmath>
#include <map>

#include "../../kernels/optimizer_update.hpp"

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
  ACCRUE_CHECK(std::isfinite(lr) && lr >= 0.0, "RMSprop: lr must be >= 0, got {}", lr);
  ACCRUE_CHECK(alpha >= 0.0 && alpha <= 1.0, "RMSprop: alpha must be in [0, 1], got {}", alpha);
  ACCRUE_CHECK(eps >= 0.0, "RMSprop: eps must be >= 0, got {}", eps);
  ACCRUE_CHECK(weight_decay >= 0.0, "RMSprop: weight_decay must be >= 0, got {}", weight_decay);
  ACCRUE_CHECK(momentum >= 0.0, "RMSprop: momentum must be >= 0, got {}", momentum);
}

std::unique_ptr<Optimizer> RMSprop::create(std::vector<Tensor> parameters) const {
  return make_optimizer<RmspropOptimizer>(*this, std::move(parameters));
}

std::string RMSprop::str() const {
  std::string s = fmt::format("RMSprop(lr={:g}", lr);
  if (alpha != 0.99) s += fmt::format(", alpha={:g}", alpha);
  if (eps != 1e-8) s += fmt::format(", eps={:g}", eps);
  if (weight_decay != 0.0) s += fmt::format(", weight_decay={:g}", weight_decay);
  if (momentum != 0.0) s += fmt::format(", momentum={:g}", momentum);
  if (centered) s += ", centered=True";
  return s + ")";
}

void Adagrad::validate() const {
  ACCRUE_CHECK(std::isfinite(lr) && lr >= 0.0, "Adagrad: lr must be >= 0, got {}", lr);
  ACCRUE_CHECK(lr_decay >= 0.0, "Adagrad: lr_decay must be >= 0, got {}", lr_decay);
  ACCRUE_CHECK(weight_decay >= 0.0, "Adagrad: weight_decay must be >= 0, got {}", weight_decay);
  ACCRUE_CHECK(initial_accumulator_value >= 0.0, "Adagrad: initial_accumulator_value must be >= 0, got {}",
               initial_accumulator_value);
  ACCRUE_CHECK(eps >= 0.0, "Adagrad: eps must be >= 0, got {}", eps);
}

std::unique_ptr<Optimizer> Adagrad::create(std::vector<Tensor> parameters) const {
  return make_optimizer<AdagradOptimizer>(*this, std::move(parameters));
}

std::string Adagrad::str() const {
  std::string s = fmt::format("Adagrad(lr={:g}", lr);
  if (lr_decay != 0.0) s += fmt::format(", lr_decay={:g}", lr_decay);
  if (weight_decay != 0.0) s += fmt::format(", weight_decay={:g}", weight_decay);
  if (initial_accumulator_value != 0.0) s += fmt::format(", initial_accumulator_value={:g}", initial_accumulator_value);
  if (eps != 1e-10) s += fmt::format(", eps={:g}", eps);
  return s + ")";
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
