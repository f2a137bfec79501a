#pragma once
// The layer-wise optimizers for large batches, whose step for each parameter tensor is scaled by a
// trust ratio ||w|| / ||update||: LARS (You, Gitman, Ginsburg 2017, arXiv 1708.03888; SGD with
// momentum, for convolutional networks) and LAMB (You et al. 2019, arXiv 1904.00962; Adam's
// moments, for attention models). A trust ratio of a zero weight or a zero update is 1.

#include <array>
#include <string>
#include <vector>

#include "recipe_steps.hpp"
#include "stateful.hpp"

namespace accrue::optim {

/// The parameters LARS and LAMB leave out of the trust ratio and of weight decay: the papers leave
/// out biases and normalization weights.
struct Exclude {
  /// Parameters of one dimension (biases, normalization weights and shifts).
  bool vectors = true;
  /// Parameters whose name is one of these or ends with "." and one of these: "bias" leaves out
  /// every bias, "3.weight" one parameter (names as Model::named_parameters gives them).
  std::vector<std::string> names = {};

  /// Whether the parameter named `name` (empty when unnamed) is left out.
  bool excludes(const std::string& name, const Tensor& parameter) const;
  friend bool operator==(const Exclude&, const Exclude&) = default;
};

/// LARS: for each tensor, trust = eta ||w|| / (||g|| + wd ||w|| + eps), then
/// v = momentum v + lr trust (g + wd w) and w -= v (the paper's Algorithm 1: the learning rate is
/// inside the momentum). `larc_clip` is LARC's clipping mode (apex.parallel.LARC): the tensor's step
/// size is min(trust, lr) instead of lr trust.
struct LARS {
  double lr = 0.1;
  double momentum = 0.9;
  double weight_decay = 0.0;
  /// eta, the paper's trust coefficient.
  double trust_coefficient = 1e-3;
  double eps = 0.0;
  Exclude exclude = {};
  bool larc_clip = false;

  void validate() const;
  std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const;
  std::string str() const;
  /// The momentum buffer, when there is momentum.
  int state_tensors() const { return momentum != 0.0 ? 1 : 0; }
  ACCRUE_RECIPE_STEPS
  friend bool operator==(const LARS&, const LARS&) = default;
};

/// LAMB: Adam's moments m and v, r = m^ / (sqrt(v^) + eps) + wd w, and w -= lr (||w|| / ||r||) r
/// for each tensor (the paper's Algorithm 2 with phi the identity). Where the paper leaves a choice
/// this follows apex's FusedLAMB: eps added after the square root, bias correction on by default,
/// its defaults (eps 1e-6, weight_decay 0.01); apex's built-in gradient clipping is not part of it
/// (chain .clip(1.0) for that).
struct LAMB {
  double lr = 1e-3;
  std::array<double, 2> betas{0.9, 0.999};
  double eps = 1e-6;
  double weight_decay = 0.01;
  Exclude exclude = {};
  /// Divides the moments by 1 - beta^t.
  bool bias_correction = true;

  void validate() const;
  std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const;
  std::string str() const;
  /// First and second moments (and, during a step, one tensor's update as a temporary).
  int state_tensors() const { return 2; }
  ACCRUE_RECIPE_STEPS
  friend bool operator==(const LAMB&, const LAMB&) = default;
};

/// LARS and LAMB's common part: which parameters are excluded, and the trust ratios of the last step.
class LayerwiseOptimizer : public StatefulOptimizer {
 public:
  /// The trust ratio each parameter's last step used (1 for an excluded one; 0 before its first
  /// step). LAMB's is ||w|| / ||r||, LARS's eta ||w|| / (||g|| + wd ||w|| + eps).
  const std::vector<double>& trust_ratios() const { return trust_ratios_; }
  /// Whether parameter `index` is left out of the trust ratio and weight decay.
  bool excluded(std::size_t index) const { return exclude_.excludes(parameter_name(index), parameters_.at(index)); }

 protected:
  LayerwiseOptimizer(std::vector<Tensor> parameters, double lr, std::vector<std::string> names, Exclude exclude);
  Exclude exclude_;
  std::vector<double> trust_ratios_;
};

class LarsOptimizer final : public ConfiguredOptimizer<LARS, LayerwiseOptimizer> {
 public:
  LarsOptimizer(std::vector<Tensor> parameters, const LARS& config);

 protected:
  void update(std::size_t index, const Tensor& param, const Tensor& grad) override;
};

class LambOptimizer final : public ConfiguredOptimizer<LAMB, LayerwiseOptimizer> {
 public:
  LambOptimizer(std::vector<Tensor> parameters, const LAMB& config);

 protected:
  void update(std::size_t index, const Tensor& param, const Tensor& grad) override;
};

}  // namespace accrue::optim
