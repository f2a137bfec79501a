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
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    update(i, p, g);
  }
  ++steps_;
}

void Optimizer::zero_grad() {
  for (Tensor& p : parameters_) p.set_grad(Tensor());
}

}  // namespace accrue::optim
