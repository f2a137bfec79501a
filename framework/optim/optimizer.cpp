#include "accrue/framework/optim/optimizer.hpp"

#include <cmath>

#include "accrue/framework/autograd.hpp"

namespace accrue::optim {

Optimizer::Optimizer(std::vector<Tensor> parameters, double lr) : parameters_(std::move(parameters)), lr_(lr) {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i];
    ACCRUE_CHECK(p.defined(), "optimizer: parameter {} is undefined", i);
    ACCRUE_CHECK(p.requires_grad() && p.is_leaf(),
                 "optimizer: parameter {} (shape {}) is not a leaf that requires grad, so it never gets a gradient", i,
                 p.shape());
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  ACCRUE_CHECK(std::isfinite(lr) && lr >= 0.0, "the learning rate (lr) must be a finite number >= 0, got {}", lr);
  lr_ = lr;
}

void Optimizer::step() {
  const NoGradGuard no_grad;
  std::vector<std::size_t> indices;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i];
    if (!p.grad().defined()) continue;
    ACCRUE_CHECK(p.device() == parameters_[indices.empty() ? i : indices.front()].device(),
                 "optimizer: parameters {} and {} are on {} and {}; move the model to one device",
                 indices.empty() ? i : indices.front(), i, parameters_[indices.empty() ? i : indices.front()].device(),
                 p.device());
    indices.push_back(i);
  }
  update_all(indices);
  ++steps_;
}

void Optimizer::update_all(const std::vector<std::size_t>& indices) {
  for (std::size_t i : indices) update(i, parameters_[i], parameters_[i].grad());
}

void Optimizer::zero_grad() {
  for (Tensor& p : parameters_) p.set_grad(Tensor());
}

}  // namespace accrue::optim
