#include "optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "../autograd/autograd.hpp"
#include "../../kernels/optimizer_update.hpp"
#include "../serialization/safetensors.hpp"

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
  if (average_options_ && average_options_->kind == WeightAverage::Kind::ema && average_tensors_.empty()) start_average();
  update_all(indices);
  ++steps_;
  if (average_options_) update_average();
}

void Optimizer::keep_average(const WeightAverage& average) {
  ACCRUE_CHECK(average.decay >= 0.0 && average.decay < 1.0, "optimizer {}: the average's decay must be in [0, 1), got {}",
               str(), average.decay);
  average_options_ = average;
  average_tensors_.clear();
  average_updates_ = 0;
}

void Optimizer::start_average() {
  average_tensors_.clear();
  for (const Tensor& p : parameters_) average_tensors_.push_back(adopt_state_tensor(p, p));
}

void Optimizer::update_average() {
  const WeightAverage& a = *average_options_;
  const auto n = static_cast<double>(average_updates_);
  double decay = a.decay;
  if (a.kind == WeightAverage::Kind::swa) {
    if (steps_ < a.start) return;
    if (average_tensors_.empty()) {  // the first averaged weights are the average
      start_average();
      average_updates_ = 1;
      return;
    }
    decay = n / (n + 1.0);
  } else if (a.warmup) {
    decay = std::min(a.decay, (1.0 + n) / (10.0 + n));
  }
  ACCRUE_ASSERT(average_tensors_.size() == parameters_.size());
  std::vector<kernels::UpdateSlot<0>> slots;  // the average is the tensor the rule writes, the parameter the one it reads
  for (std::size_t i = 0; i < parameters_.size(); ++i) slots.push_back({average_tensors_[i], parameters_[i], {}});
  kernels::optimizer_update<kernels::common::AverageRule>(
      slots, {.decay = static_cast<float>(decay), .one_minus_decay = static_cast<float>(1.0 - decay)});
  ++average_updates_;
  if (a.overwrite_every > 0 && average_updates_ % a.overwrite_every == 0) load_average_into_parameters();
}

void Optimizer::load_average_into_parameters() {
  const NoGradGuard no_grad;
  for (std::size_t i = 0; i < average_tensors_.size(); ++i) parameters_[i].copy_(average_tensors_[i]);
}

void Optimizer::move_average_to(Device device) {
  for (Tensor& t : average_tensors_) t.to_(device);
}

void Optimizer::swap_average() {
  const NoGradGuard no_grad;
  for (std::size_t i = 0; i < average_tensors_.size(); ++i) {
    const Tensor weights = parameters_[i].clone();
    parameters_[i].copy_(average_tensors_[i]);
    average_tensors_[i].copy_(weights);
  }
}

void Optimizer::update_all(const std::vector<std::size_t>& indices) {
  for (std::size_t i : indices) update(i, parameters_[i], parameters_[i].grad());
}

OptimizerState Optimizer::state() const {
  OptimizerState state;
  save_state(state);
  state.counters["steps"] = steps_;
  if (!average_tensors_.empty()) {
    for (std::size_t i = 0; i < average_tensors_.size(); ++i)
      state.tensors.emplace_back(fmt::format("average.{}", i), average_tensors_[i]);
    state.counters["average.updates"] = average_updates_;
  }
  return state;
}

void Optimizer::load_state(const OptimizerState& state) {
  const auto steps = state.counters.find("steps");
  ACCRUE_CHECK(steps != state.counters.end() && steps->second >= 0,
               "optimizer {}: the saved state has no step count; nothing was loaded", str());
  std::vector<Tensor> average;
  std::int64_t updates = 0;
  restore_state(take_average(state, average, updates));
  steps_ = steps->second;
  for (std::size_t i = 0; i < average.size(); ++i) average[i] = adopt_state_tensor(average[i], parameters_[i]);
  average_tensors_ = std::move(average);
  average_updates_ = updates;
}

OptimizerState Optimizer::take_average(const OptimizerState& state, std::vector<Tensor>& average,
                                       std::int64_t& updates) const {
  const auto saved_updates = state.counters.find("average.updates");
  if (!average_options_ || saved_updates == state.counters.end()) return state;  // restore_state names strays
  // The average's entries apart, the optimizer's own to restore_state.
  OptimizerState own, averages;
  own.counters = state.counters;
  own.counters.erase("average.updates");
  for (const auto& entry : state.tensors) (entry.first.starts_with("average.") ? averages : own).tensors.push_back(entry);
  std::vector<std::string> problems, claimed;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    claimed.push_back(fmt::format("average.{}", i));
    average.push_back(check_state_tensor(averages, claimed.back(), parameters_[i], true, problems));
  }
  if (saved_updates->second < 1) problems.push_back(fmt::format("'average.updates' is {}", saved_updates->second));
  throw_state_problems(averages, claimed, std::move(problems));
  updates = saved_updates->second;
  return own;
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
