#include "accrue/framework/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "accrue/framework/autograd.hpp"
#include "accrue/framework/serialization/safetensors.hpp"

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

void Optimizer::set_parameter_names(std::vector<std::string> names) {
  ACCRUE_CHECK(names.size() == parameters_.size(), "optimizer {}: {} parameter names for {} parameters", str(),
               names.size(), parameters_.size());
  names_ = std::move(names);
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

OptimizerState Optimizer::state() const {
  OptimizerState state;
  save_state(state);
  state.counters["steps"] = steps_;
  return state;
}

void Optimizer::load_state(const OptimizerState& state) {
  const auto steps = state.counters.find("steps");
  ACCRUE_CHECK(steps != state.counters.end() && steps->second >= 0,
               "optimizer {}: the saved state has no step count; nothing was loaded", str());
  restore_state(state);
  steps_ = steps->second;
}

void Optimizer::save_state(OptimizerState&) const {
  throw NotSupported(fmt::format("optimizer {} does not say what state it keeps, so it cannot be checkpointed: "
                                 "override Optimizer::save_state and restore_state",
                                 str()));
}

void Optimizer::restore_state(const OptimizerState&) {
  throw NotSupported(fmt::format("optimizer {} does not say what state it keeps, so it cannot be resumed: "
                                 "override Optimizer::save_state and restore_state",
                                 str()));
}

Tensor Optimizer::check_state_tensor(const OptimizerState& state, const std::string& name, const Tensor& like,
                                     bool required, std::vector<std::string>& problems) {
  const Tensor* saved = serialization::find_tensor(state.tensors, name);
  if (saved == nullptr) {
    if (required) problems.push_back(fmt::format("missing '{}' {}", name, like.shape()));
    return {};
  }
  if (!(saved->shape() == like.shape()) || saved->dtype() != DType::f32) {
    problems.push_back(fmt::format("'{}' is {} {}, the parameter needs float32 {}", name, dtype_name(saved->dtype()),
                                   saved->shape(), like.shape()));
    return {};
  }
  return *saved;
}

Tensor Optimizer::adopt_state_tensor(const Tensor& saved, const Tensor& like) {
  Tensor t = Tensor::empty(like.shape(), {.device = like.device(), .category = MemoryCategory::optimizer_state});
  t.copy_(saved);
  return t;
}

void Optimizer::throw_state_problems(const OptimizerState& state, const std::vector<std::string>& claimed,
                                     std::vector<std::string> problems) const {
  for (const auto& [name, t] : state.tensors)
    if (std::find(claimed.begin(), claimed.end(), name) == claimed.end())
      problems.push_back(fmt::format("unexpected '{}' {}", name, t.shape()));
  if (problems.empty()) return;
  std::string all;
  for (const auto& p : problems) all += "\n  " + p;
  throw ValueError(fmt::format("optimizer {}: the saved state does not fit its {} parameters ({} problem{}); nothing "
                               "was loaded:{}",
                               str(), parameters_.size(), problems.size(), problems.size() == 1 ? "" : "s", all));
}

void Optimizer::zero_grad() {
  for (Tensor& p : parameters_) p.set_grad(Tensor());
}

}  // namespace accrue::optim
