#include "layerwise.hpp"

#include <algorithm>
#include <cmath>

#include "../../kernels/elementwise.hpp"
#include "../../kernels/optimizer_update.hpp"
#include "../../kernels/reduce.hpp"

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
  ACCRUE_CHECK(std::isfinite(lr) && lr >= 0.0, "LARS: lr must be >= 0, got {}", lr);
  ACCRUE_CHECK(momentum >= 0.0 && momentum < 1.0, "LARS: momentum must be in [0, 1), got {}", momentum);
  ACCRUE_CHECK(weight_decay >= 0.0, "LARS: weight_decay must be >= 0, got {}", weight_decay);
  ACCRUE_CHECK(trust_coefficient > 0.0, "LARS: trust_coefficient must be > 0, got {}", trust_coefficient);
  ACCRUE_CHECK(eps >= 0.0, "LARS: eps must be >= 0, got {}", eps);
}

std::unique_ptr<Optimizer> LARS::create(std::vector<Tensor> parameters) const {
  return make_optimizer<LarsOptimizer>(*this, std::move(parameters));
}

std::string LARS::str() const {
  std::string s = fmt::format("LARS(lr={:g}", lr);
  if (momentum != 0.9) s += fmt::format(", momentum={:g}", momentum);
  if (weight_decay != 0.0) s += fmt::format(", weight_decay={:g}", weight_decay);
  if (trust_coefficient != 1e-3) s += fmt::format(", trust_coefficient={:g}", trust_coefficient);
  if (eps != 0.0) s += fmt::format(", eps={:g}", eps);
  if (larc_clip) s += ", larc_clip=True";
  return s + exclude_str(exclude) + ")";
}

void LAMB::validate() const {
  ACCRUE_CHECK(std::isfinite(lr) && lr >= 0.0, "LAMB: lr must be >= 0, got {}", lr);
  ACCRUE_CHECK(betas[0] >= 0.0 && betas[0] < 1.0, "LAMB: betas[0] must be in [0, 1), got {}", betas[0]);
  ACCRUE_CHECK(betas[1] >= 0.0 && betas[1] < 1.0, "LAMB: betas[1] must be in [0, 1), got {}", betas[1]);
  ACCRUE_CHECK(eps >= 0.0, "LAMB: eps must be >= 0, got {}", eps);
  ACCRUE_CHECK(weight_decay >= 0.0, "LAMB: weight_decay must be >= 0, got {}", weight_decay);
}

std::unique_ptr<Optimizer> LAMB::create(std::vector<Tensor> parameters) const {
  return make_optimizer<LambOptimizer>(*this, std::move(parameters));
}

std::string LAMB::str() const {
  std::string s = fmt::format("LAMB(lr={:g}", lr);
  if (betas[0] != 0.9 || betas[1] != 0.999) s += fmt::format(", betas=({:g}, {:g})", betas[0], betas[1]);
  if (eps != 1e-6) s += fmt::format(", eps={:g}", eps);
  if (weight_decay != 0.01) s += fmt::format(", weight_decay={:g}", weight_decay);
  if (!bias_correction) s += ", bias_correction=False";
  return s + exclude_str(exclude) + ")";
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
