#include "lion.hpp"

#include <cmath>

#include "../../kernels/optimizer_update.hpp"

namespace accrue::optim {

void Lion::validate() const {
  ACCRUE_CHECK(std::isfinite(lr) && lr >= 0.0, "Lion: lr must be >= 0, got {}", lr);
  ACCRUE_CHECK(betas[0] >= 0.0 && betas[0] < 1.0, "Lion: betas[0] must be in [0, 1), got {}", betas[0]);
  ACCRUE_CHECK(betas[1] >= 0.0 && betas[1] < 1.0, "Lion: betas[1] must be in [0, 1), got {}", betas[1]);
  ACCRUE_CHECK(weight_decay >= 0.0, "Lion: weight_decay must be >= 0, got {}", weight_decay);
}

std::unique_ptr<Optimizer> Lion::create(std::vector<Tensor> parameters) const {
  return make_optimizer<LionOptimizer>(*this, std::move(parameters));
}

std::string Lion::str() const {
  std::string s = fmt::format("Lion(lr={:g}", lr);
  if (betas[0] != 0.9 || betas[1] != 0.99) s += fmt::format(", betas=({:g}, {:g})", betas[0], betas[1]);
  if (weight_decay != 0.0) s += fmt::format(", weight_decay={:g}", weight_decay);
  return s + ")";
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
