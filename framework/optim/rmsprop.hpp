#pragma once
// RMSprop and Adagrad: torch.optim.RMSprop and torch.optim.Adagrad's options, defaults and updates
// (kernels/common/optimizer_updates.hpp has the equations).

#include "recipe_steps.hpp"
#include "stateful.hpp"

namespace accrue::optim {

/// torch.optim.RMSprop (Keras's compile default): `optim::RMSprop{.lr = 1e-3, .momentum = 0.9}`.
struct RMSprop {
  double lr = 1e-2;
  /// Smoothing constant of the running square.
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  /// Normalizes by the running variance (square minus squared mean) instead of the running square.
  bool centered = false;

  void validate() const;
  std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const;
  /// "RMSprop(lr=0.01)", listing the options that differ from the defaults.
  std::string str() const;
  /// The running square, with momentum its buffer, centered the running mean.
  int state_tensors() const { return 1 + (momentum != 0.0 ? 1 : 0) + (centered ? 1 : 0); }
  ACCRUE_RECIPE_STEPS
  friend bool operator==(const RMSprop&, const RMSprop&) = default;
};

/// torch.optim.Adagrad: `optim::Adagrad{.lr = 0.1}`.
struct Adagrad {
  double lr = 1e-2;
  /// The step size at step t is lr / (1 + (t - 1) * lr_decay).
  double lr_decay = 0.0;
  double weight_decay = 0.0;
  /// The running sum of squares starts at this value.
  double initial_accumulator_value = 0.0;
  double eps = 1e-10;

  void validate() const;
  std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const;
  std::string str() const;
  /// The running sum of squared gradients.
  int state_tensors() const { return 1; }
  ACCRUE_RECIPE_STEPS
  friend bool operator==(const Adagrad&, const Adagrad&) = default;
};

class RmspropOptimizer final : public ConfiguredOptimizer<RMSprop, StatefulOptimizer> {
 public:
  RmspropOptimizer(std::vector<Tensor> parameters, const RMSprop& config);

 protected:
  void update(std::size_t index, const Tensor& param, const Tensor& grad) override;
  void update_all(const std::vector<std::size_t>& indices) override;
};

class AdagradOptimizer final : public ConfiguredOptimizer<Adagrad, StatefulOptimizer> {
 public:
  AdagradOptimizer(std::vector<Tensor> parameters, const Adagrad& config);

 protected:
  void update(std::size_t index, const Tensor& param, const Tensor& grad) override;
  void update_all(const std::vector<std::size_t>& indices) override;
};

}  // namespace accrue::optim
