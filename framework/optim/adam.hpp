#pragma once
// Adam and AdamW: torch.optim.Adam and torch.optim.AdamW's options, defaults and update.
// Adam adds weight decay to the gradient; AdamW decays the weights directly (decoupled).

#include <array>

#include "optimizer.hpp"
#include "recipe_steps.hpp"
#include "../../kernels/common/optimizer_updates.hpp"

namespace accrue::optim {

/// The options of Adam and AdamW, which differ only in how weight decay applies (AdamW's is
/// `decoupled`: it decays the weights, not the gradient) and in its default.
template <bool Decoupled>
struct AdamConfig {
  double lr = 1e-3;
  std::array<double, 2> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = Decoupled ? 1e-2 : 0.0;
  bool amsgrad = false;
  bool maximize = false;

  void validate() const;
  std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const;
  std::string str() const;
  /// First and second moments, and their running maximum with amsgrad.
  int state_tensors() const { return amsgrad ? 3 : 2; }
  ACCRUE_RECIPE_STEPS
  friend bool operator==(const AdamConfig&, const AdamConfig&) = default;
};
/// torch.optim.Adam: `optim::Adam{.lr = 1e-3}`.
using Adam = AdamConfig<false>;
/// torch.optim.AdamW: `optim::AdamW{.lr = 1e-3, .weight_decay = 0.05}`.
using AdamW = AdamConfig<true>;
extern template struct AdamConfig<false>;
extern template struct AdamConfig<true>;

class AdamOptimizer final : public Optimizer {
 public:
  /// `decoupled` selects AdamW's weight decay.
  struct Options {
    std::array<double, 2> betas;
    double eps;
    double weight_decay;
    bool amsgrad;
    bool maximize;
    bool decoupled;
  };
  AdamOptimizer(std::vector<Tensor> parameters, double lr, const Options& options);
  std::string str() const override;
  void move_state_to(Device device) override;

  struct State {
    std::int64_t step = 0;
    Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  };
  const State& state(std::size_t i) const { return states_.at(i); }

 protected:
  void update(std::size_t index, const Tensor& param, const Tensor& grad) override;
  void update_all(const std::vector<std::size_t>& indices) override;
  void save_state(OptimizerState& state) const override;
  void restore_state(const OptimizerState& state) override;

 private:
  /// Creates the state on the first step and counts the step.
  State& begin_step(std::size_t index);
  kernels::common::AdamRule::Hyper hyper(std::int64_t step) const;
  Options options_;
  std::vector<State> states_;
};

}  // namespace accrue::optim
