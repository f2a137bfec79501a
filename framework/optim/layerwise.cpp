#include "layerwise.hpp"

#include <algorithm>
#include <cmath>

#include "../../kernels/elementwise.hpp"
#include "../../kernels/optimizer_update.hpp"
#include "../../kernels/reduce.hpp"
#include "options_struct.hpp"

namespace accrue::optim {
namespace {

std::string exclude_str(const Exclude& e) {
  if (e == Exclude{}) return {};
  std::string s = fmt::format(", exclude=(vectors={}", e.vectors ? "True" : "False");
  for (const std::string& n : e.names) s += fmt::format(", '{}'", n);
  return s + ")";
}

double norm(const Tensor& t) { return std::sqrt(kernels::sum_of_squares(t)); }

}  // namespace

bool Exclude::excludes(const std::string& name, const Tensor& parameter) const {
  if (vectors && parameter.rank() <= 1) return true;
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
    return name == n || (name.size() > n.size() && name.ends_with(n) && name[name.size() - n.size() - 1] == '.');
  });
}

void LARS::validate() const {
  check_options("LARS", {{"lr", lr, OptionRange::learning_rate}, {"momentum", momentum, OptionRange::below_one},
                         {"weight_decay", weight_decay, OptionRange::at_least_zero},
                         {"trust_coefficient", trust_coefficient, OptionRange::above_zero},
                         {"eps", eps, OptionRange::at_least_zero}});
}

std::unique_ptr<Optimizer> LARS::create(std::vector<Tensor> parameters) const {
  return make_optimizer<LarsOptimizer>(*this, std::move(parameters));
}

std::string LARS::str() const {
  const LARS d;
  return options_str("LARS", lr,
                     {{"momentum", momentum, d.momentum}, {"weight_decay", weight_decay, d.weight_decay},
                      {"trust_coefficient", trust_coefficient, d.trust_coefficient}, {"eps", eps, d.eps},
                      {"larc_clip", larc_clip, d.larc_clip}},
                     exclude_str(exclude));
}

void LAMB::validate() const {
  check_options("LAMB", {{"lr", lr, OptionRange::learning_rate}, {"betas[0]", betas[0], OptionRange::below_one},
                         {"betas[1]", betas[1], OptionRange::below_one}, {"eps", eps, OptionRange::at_least_zero},
                         {"weight_decay", weight_decay, OptionRange::at_least_zero}});
}

std::unique_ptr<Optimizer> LAMB::create(std::vector<Tensor> parameters) const {
  return make_optimizer<LambOptimizer>(*this, std::move(parameters));
}

std::string LAMB::str() const {
  const LAMB d;
  return options_str("LAMB", lr,
                     {{"betas", betas, d.betas}, {"eps", eps, d.eps}, {"weight_decay", weight_decay, d.weight_decay},
                      {"bias_correction", bias_correction, d.bias_correction}},
                     exclude_str(exclude));
}

LayerwiseOptimizer::LayerwiseOptimizer(std::vector<Tensor> parameters, double lr, std::vector<std::string> names,
                                       Exclude exclude)
    : StatefulOptimizer(std::move(parameters), lr, std::move(names)), exclude_(std::move(exclude)) {
  trust_ratios_.assign(parameters_.size(), 0.0);
}

LarsOptimizer::LarsOptimizer(std::vector<Tensor> parameters, const LARS& config)
    : ConfiguredOptimizer(std::move(parameters), config,
                          config.momentum != 0.0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{},
                          config.exclude) {}

void LarsOptimizer::update(std::size_t index, const Tensor& param, const Tensor& grad) {
  const Slot& s = begin_step(index);
  const bool out = excluded(index);
  const double wd = out ? 0.0 : config_.weight_decay;
  double trust = 1.0, scaled_lr = lr_;
  if (!out) {
    const double w = norm(param), g = norm(grad);
    trust = w > 0.0 && g > 0.0 ? config_.trust_coefficient * w / (g + wd * w + config_.eps) : 1.0;
    scaled_lr = config_.larc_clip ? std::min(trust, lr_) : lr_ * trust;
  }
  trust_ratios_[index] = trust;
  kernels::optimizer_update<kernels::common::LarsRule>({param, grad, {s.tensors.empty() ? Tensor() : s.tensors[0]}},
                                                      {.scaled_lr = static_cast<float>(scaled_lr),
                                                       .momentum = static_cast<float>(config_.momentum),
                                                       .weight_decay = static_cast<float>(wd)});
}

LambOptimizer::LambOptimizer(std::vector<Tensor> parameters, const LAMB& config)
    : ConfiguredOptimizer(std::move(parameters), config, std::vector<std::string>{"exp_avg", "exp_avg_sq"},
                          config.exclude) {}

void LambOptimizer::update(std::size_t index, const Tensor& param, const Tensor& grad) {
  const Slot& s = begin_step(index);
  const bool out = excluded(index);
  const auto& b = config_.betas;
  const auto t = static_cast<double>(s.step);
  const kernels::common::LambRule::Hyper h{
      .beta1 = static_cast<float>(b[0]),
      .one_minus_beta1 = static_cast<float>(1.0 - b[0]),
      .beta2 = static_cast<float>(b[1]),
      .one_minus_beta2 = static_cast<float>(1.0 - b[1]),
      .eps = static_cast<float>(config_.eps),
      .weight_decay = static_cast<float>(out ? 0.0 : config_.weight_decay),
      .bias_correction1 = static_cast<float>(config_.bias_correction ? 1.0 - std::pow(b[0], t) : 1.0),
      .bias_correction2 = static_cast<float>(config_.bias_correction ? 1.0 - std::pow(b[1], t) : 1.0)};
  // The update r, then its norm: one parameter-sized temporary at a time.
  const Tensor r = Tensor::empty(param.shape(), {.device = param.device()});
  kernels::optimizer_update<kernels::common::LambRule>({param, grad, {s.tensors[0], s.tensors[1], r}}, h);
  const double w = out ? 0.0 : norm(param), u = out ? 0.0 : norm(r);
  const double trust = w > 0.0 && u > 0.0 ? w / u : 1.0;
  trust_ratios_[index] = trust;
  kernels::add_into(param, r, static_cast<float>(-lr_ * trust));
}

}  // namespace accrue::optim
