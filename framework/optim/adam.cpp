#include "adam.hpp"

#include <cmath>
#include <map>

#include "../../kernels/optimizer_update.hpp"
#include "options_struct.hpp"

namespace accrue::optim {
template <bool Decoupled>
void AdamConfig<Decoupled>::validate() const {
  check_options(Decoupled ? "AdamW" : "Adam", {{"lr", lr, OptionRange::learning_rate},
                                               {"betas[0]", betas[0], OptionRange::below_one},
                                               {"betas[1]", betas[1], OptionRange::below_one},
                                               {"eps", eps, OptionRange::at_least_zero},
                                               {"weight_decay", weight_decay, OptionRange::at_least_zero}});
}

template <bool Decoupled>
std::unique_ptr<Optimizer> AdamConfig<Decoupled>::create(std::vector<Tensor> parameters) const {
  validate();
  return std::make_unique<AdamOptimizer>(
      std::move(parameters), lr, AdamOptimizer::Options{betas, eps, weight_decay, amsgrad, maximize, Decoupled});
}

template <bool Decoupled>
std::string AdamConfig<Decoupled>::str() const {
  const AdamConfig d;
  return options_str(Decoupled ? "AdamW" : "Adam", lr,
                     {{"betas", betas, d.betas}, {"eps", eps, d.eps}, {"weight_decay", weight_decay, d.weight_decay},
                      {"amsgrad", amsgrad, d.amsgrad}, {"maximize", maximize, d.maximize}});
}

template struct AdamConfig<false>;
template struct AdamConfig<true>;

AdamOptimizer::AdamOptimizer(std::vector<Tensor> parameters, double lr, const Options& options)
    : Optimizer(std::move(parameters), lr), options_(options) {
  states_.resize(parameters_.size());
}

std::string AdamOptimizer::str() const {
  const auto& o = options_;
  return o.decoupled ? AdamW{lr_, o.betas, o.eps, o.weight_decay, o.amsgrad, o.maximize}.str()
                     : Adam{lr_, o.betas, o.eps, o.weight_decay, o.amsgrad, o.maximize}.str();
}

AdamOptimizer::State& AdamOptimizer::begin_step(std::size_t index) {
  State& s = states_[index];
  if (s.step == 0) {
    const Tensor& param = parameters_[index];
    const TensorOptions state{.device = param.device(), .category = MemoryCategory::optimizer_state};
    s.exp_avg = Tensor::zeros(param.shape(), state);
    s.exp_avg_sq = Tensor::zeros(param.shape(), state);
    if (options_.amsgrad) s.max_exp_avg_sq = Tensor::zeros(param.shape(), state);
  }
  ++s.step;
  return s;
}

void AdamOptimizer::update(std::size_t index, const Tensor& param, const Tensor& grad) {
  const State& s = begin_step(index);
  kernels::optimizer_update<kernels::common::AdamRule>({param, grad, {s.exp_avg, s.exp_avg_sq, s.max_exp_avg_sq}},
                                                      hyper(s.step));
}

void AdamOptimizer::update_all(const std::vector<std::size_t>& indices) {
  // Parameters that skipped steps (no gradient) have their own step counts; each count is one group.
  std::map<std::int64_t, std::vector<kernels::UpdateSlot<3>>> groups;
  for (std::size_t i : indices) {
    const State& s = begin_step(i);
    groups[s.step].push_back({parameters_[i], parameters_[i].grad(), {s.exp_avg, s.exp_avg_sq, s.max_exp_avg_sq}});
  }
  for (const auto& [step, slots] : groups) kernels::optimizer_update<kernels::common::AdamRule>(slots, hyper(step));
}

void AdamOptimizer::move_state_to(Device device) {
  for (State& s : states_)
    for (Tensor* t : {&s.exp_avg, &s.exp_avg_sq, &s.max_exp_avg_sq})
      if (t->defined()) t->to_(device);
}

void AdamOptimizer::save_state(OptimizerState& state) const {
  for (std::size_t i = 0; i < states_.size(); ++i) {
    const State& s = states_[i];
    if (s.step == 0) continue;
    state.counters[fmt::format("{}.step", i)] = s.step;
    state.tensors.emplace_back(fmt::format("{}.exp_avg", i), s.exp_avg);
    state.tensors.emplace_back(fmt::format("{}.exp_avg_sq", i), s.exp_avg_sq);
    if (options_.amsgrad) state.tensors.emplace_back(fmt::format("{}.max_exp_avg_sq", i), s.max_exp_avg_sq);
  }
}

void AdamOptimizer::restore_state(const OptimizerState& state) {
  std::vector<std::string> problems, claimed;
  std::vector<State> saved(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const auto step = state.counters.find(fmt::format("{}.step", i));
    const std::array<std::string, 3> names{fmt::format("{}.exp_avg", i), fmt::format("{}.exp_avg_sq", i),
                                           fmt::format("{}.max_exp_avg_sq", i)};
    if (step == state.counters.end()) continue;  // not stepped yet: tensors of it are unexpected
    claimed.insert(claimed.end(), names.begin(), names.begin() + (options_.amsgrad ? 3 : 2));
    if (step->second < 1) {
      problems.push_back(fmt::format("'{}.step' is {}; a saved step count is at least 1", i, step->second));
      continue;
    }
    State& s = saved[i];
    s.step = step->second;
    s.exp_avg = check_state_tensor(state, names[0], parameters_[i], true, problems);
    s.exp_avg_sq = check_state_tensor(state, names[1], parameters_[i], true, problems);
    if (options_.amsgrad) s.max_exp_avg_sq = check_state_tensor(state, names[2], parameters_[i], true, problems);
  }
  throw_state_problems(state, claimed, std::move(problems));
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    State& s = saved[i];
    if (s.step > 0) {
      s.exp_avg = adopt_state_tensor(s.exp_avg, parameters_[i]);
      s.exp_avg_sq = adopt_state_tensor(s.exp_avg_sq, parameters_[i]);
      if (options_.amsgrad) s.max_exp_avg_sq = adopt_state_tensor(s.max_exp_avg_sq, parameters_[i]);
    }
    states_[i] = std::move(s);
  }
}

kernels::common::AdamRule::Hyper AdamOptimizer::hyper(std::int64_t step) const {
  // Step-dependent scalars in double on the host, as PyTorch computes them in Python.
  const double bias_correction1 = 1.0 - std::pow(options_.betas[0], static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(options_.betas[1], static_cast<double>(step));
  return kernels::common::AdamRule::Hyper{static_cast<float>(lr_),
                                    static_cast<float>(options_.betas[0]),
                                    static_cast<float>(options_.betas[1]),
                                    static_cast<float>(options_.eps),
                                    static_cast<float>(options_.weight_decay),
                                    options_.decoupled,
                                    options_.amsgrad,
                                    options_.maximize,
                                    static_cast<float>(1.0 - lr_ * options_.weight_decay),
                                    static_cast<float>(lr_ / bias_correction1),
                                    static_cast<float>(std::sqrt(bias_correction2))};
}

}  // namespace accrue::optim
