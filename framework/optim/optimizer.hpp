#pragma once
// Optimizers: the update rule applied to parameters from their gradients.
//
// A configuration (optim::SGD, optim::Adam, optim::AdamW) is a plain value with PyTorch's
// defaults, written with designated initialisers: `optim::SGD{.lr = 0.01, .momentum = 0.9}`.
// create() turns it into an Optimizer over a list of parameters, which a training loop (or a
// user's own loop) drives with zero_grad(), backward() and step().

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "accrue/framework/tensor.hpp"

namespace accrue::optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> parameters, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Updates every parameter that has a gradient (parameters without one are left alone, as in
  /// PyTorch). Runs without recording autograd.
  void step();
  /// Drops the gradients (PyTorch's zero_grad(set_to_none=True)): the next backward writes them
  /// fresh instead of adding to zeros.
  void zero_grad();

  /// The learning rate used by the next step; schedulers set it.
  double lr() const { return lr_; }
  void set_lr(double lr);
  /// Steps taken so far.
  std::int64_t steps() const { return steps_; }
  const std::vector<Tensor>& parameters() const { return parameters_; }
  /// "SGD(lr=0.001, momentum=0.9)".
  virtual std::string str() const = 0;

 protected:
  /// Updates parameter `index` from `grad`.
  virtual void update(std::size_t index, const Tensor& param, const Tensor& grad) = 0;

  std::vector<Tensor> parameters_;
  double lr_;
  std::int64_t steps_ = 0;
};

/// What any optimizer configuration provides; user-defined optimizers satisfy it too.
template <class T>
concept OptimizerConfig = requires(const T& config, std::vector<Tensor> parameters) {
  { config.create(parameters) } -> std::convertible_to<std::unique_ptr<Optimizer>>;
  { config.str() } -> std::convertible_to<std::string>;
};

/// A copyable holder of any optimizer configuration.
class AnyOptimizer {
 public:
  AnyOptimizer() = default;
  template <OptimizerConfig T>
  AnyOptimizer(T config)  // NOLINT: implicit on purpose, so compile() takes any configuration
      : create_([config](std::vector<Tensor> p) { return config.create(std::move(p)); }), str_(config.str()) {}

  bool defined() const { return static_cast<bool>(create_); }
  std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const { return create_(std::move(parameters)); }
  const std::string& str() const { return str_; }

 private:
  std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)> create_;
  std::string str_;
};

}  // namespace accrue::optim
