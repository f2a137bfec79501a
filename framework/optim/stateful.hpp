#pragma once
// The base of optimizers whose state is a step count and a fixed set of tensors per parameter
// (RMSprop, Adagrad, Lion, LARS, LAMB): creates them at a parameter's first step, moves,
// checkpoints and restores them, under PyTorch's names ("3.square_avg", "3.step").

#include <string>
#include <vector>

#include "optimizer.hpp"

namespace accrue::optim {

class StatefulOptimizer : public Optimizer {
 public:
  /// What one parameter keeps: its own step count (parameters without a gradient skip steps) and
  /// the tensors named by the optimizer, in that order.
  struct Slot {
    std::int64_t step = 0;
    std::vector<Tensor> tensors;
  };
  /// Parameter i's state (step 0 and no tensors before its first step).
  const Slot& slot(std::size_t i) const { return slots_.at(i); }
  void move_state_to(Device device) override;

 protected:
  /// `names`: the state tensors each parameter keeps, created at its first step filled with
  /// `initial` (Adagrad's initial_accumulator_value; zeros otherwise).
  StatefulOptimizer(std::vector<Tensor> parameters, double lr, std::vector<std::string> names, float initial = 0.0f);
  /// Parameter `index`'s state, created at its first step; counts the step.
  Slot& begin_step(std::size_t index);
  void save_state(OptimizerState& state) const override;
  void restore_state(const OptimizerState& state) override;

 private:
  std::vector<std::string> names_;
  float initial_;
  std::vector<Slot> slots_;
};

}  // namespace accrue::optim
