#pragma once
// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms", Algorithm 2): the sign
// of an interpolation of momentum and gradient, decoupled weight decay, one state tensor.

#include <array>

#include "recipe_steps.hpp"
#include "stateful.hpp"

namespace accrue::optim {

/// `optim::Lion{.lr = 1e-4, .weight_decay = 1.0}`: c = b1 m + (1 - b1) g; w -= lr (sign(c) + wd w);
/// m = b2 m + (1 - b2) g. The paper advises an lr 3-10x smaller than AdamW's and a weight decay
/// 3-10x larger.
struct Lion {
  double lr = 1e-4;
  std::array<double, 2> betas{0.9, 0.99};
  double weight_decay = 0.0;

  void validate() const;
  std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const;
  std::string str() const;
  /// The momentum.
  int state_tensors() const { return 1; }
  ACCRUE_RECIPE_STEPS
  friend bool operator==(const Lion&, const Lion&) = default;
};

class LionOptimizer final : public ConfiguredOptimizer<Lion, StatefulOptimizer> {
 public:
  LionOptimizer(std::vector<Tensor> parameters, const Lion& config);

 protected:
  void update(std::size_t index, const Tensor& param, const Tensor& grad) override;
  void update_all(const std::vector<std::size_t>& indices) override;
};

}  // namespace accrue::optim
