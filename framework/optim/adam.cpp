#include "adam.hpp"

#include <cmath>
#include <map>

#include "../../kernels/optimizer_update.hpp"

namespace accrue::optim {
namespace {

std::string adam_str(std::string_view name, double lr, const std::array<double, 2>& betas, double eps,
                     double weight_decay, double default_decay, bool amsgrad, bool maximize) {
  std::string s = fmt::format("{}(lr={:g}", name, lr);
  if (betas[0] != 0.9 || betas[1] != 0.999) s += fmt::format(", betas=({:g}, {:g})", betas[0], betas[1]);
  if (eps != 1e-8) s += fmt::format(", eps={:g}", eps);
  if (weight_decay != default_decay) s += fmt::format(", weight_decay={:g}", weight_decay);
  if (amsgrad) s += ", amsgrad=True";
  if (maximize) s += ", maximize=True";
  return s + ")";
}

}  // namespace

template <bool Decoupled>
void AdamConfig<Decoupled>::validate() const {
  const std::string_view name = Decoupled ? "AdamW" : "Adam";
  ACCRUE_CHECK(std::isfinite(lr) && lr >= 0.0, "{}: lr must be >= 0, got {}", name, lr);
  ACCRUE_CHECK(betas[0] >= 0.0 && betas[0] < 1.0, "{}: betas[0] must be in [0, 1), got {}", name, betas[0]);
  ACCRUE_CHECK(betas[1] >= 0.0 && betas[1] < 1.0, "{}: betas[1] must be in [0, 1), got {}", name, betas[1]);
  ACCRUE_CHECK(eps >= 0.0, "{}: eps must be >= 0, got {}", name, eps);
  ACCRUE_CHECK(weight_decay >= 0.0, "{}: weight_decay must be >= 0, got {}", name, weight_decay);
}

template <bool Decoupled>
std::unique_ptr<Optimizer> AdamConfig<Decoupled>::create(std::vector<Tensor> parameters) const {
  validate();
  return std::make_unique<AdamOptimizer>(
      std::move(parameters), lr, AdamOptimizer::Options{betas, eps, weight_decay, amsgrad, maximize, Decoupled});
}

template <bool Decoupled>
std::string AdamConfig<Decoupled>::str() const {
  return adam_str(Decoupled ? "AdamW" : "Adam", lr, betas, eps, weight_decay, AdamConfig{}.weight_decay, amsgrad,
                  maximize);
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
