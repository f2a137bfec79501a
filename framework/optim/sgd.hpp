#pragma once
// Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay:
// torch.optim.SGD's options, defaults and update.

#include "optimizer.hpp"
#include "recipe_steps.hpp"
#include "../../kernels/common/optimizer_updates.hpp"

namespace accrue::optim {

struct SGD {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  /// Ascends the objective instead of descending it.
  bool maximize = false;

  /// Throws ValueError naming the option when a value is out of range.
  void validate() const;
  std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const;
  /// "SGD(lr=0.001)", listing the options that differ from the defaults.
  std::string str() const;
  /// The momentum buffer, when there is momentum.
  int state_tensors() const { return momentum != 0.0 ? 1 : 0; }
  ACCRUE_RECIPE_STEPS
  friend bool operator==(const SGD&, const SGD&) = default;
};

class SgdOptimizer final : public ConfiguredOptimizer<SGD> {
 public:
  SgdOptimizer(std::vector<Tensor> parameters, const SGD& config);
  void move_state_to(Device device) override;
  const SGD& config() const { return config_; }
  /// Momentum buffer of parameter i (undefined before its first step or without momentum).
  const Tensor& momentum_buffer(std::size_t i) const { return buffers_.at(i); }

 protected:
  void update(std::size_t index, const Tensor& param, const Tensor& grad) override;
  void update_all(const std::vector<std::size_t>& indices) override;
  void save_state(OptimizerState& state) const override;
  void restore_state(const OptimizerState& state) override;

 private:
  /// Creates the momentum buffer on a parameter's first step; true on that step.
  bool begin_step(std::size_t index);
  kernels::common::SgdRule::Hyper hyper(bool first_step) const;
  std::vector<Tensor> buffers_;
};

}  // namespace accrue::optim
