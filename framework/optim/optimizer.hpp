#pragma once
// Optimizers: the update rule applied to parameters from their gradients.
//
// A configuration (optim::SGD, Adam, AdamW, RMSprop, Adagrad, LARS, LAMB, Lion) is a plain value
// with PyTorch's defaults where PyTorch has the optimizer (the papers' and apex's otherwise),
// written with designated initialisers: `optim::SGD{.lr = 0.01, .momentum = 0.9}`.
// create() turns it into an Optimizer over a list of parameters, which a training loop (or a
// user's own loop) drives with zero_grad(), backward() and step().

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../core/non_copyable.hpp"
#include "../core/tensor.hpp"

namespace accrue::optim {

/// What a training checkpoint keeps of an optimizer: state tensors by name ("3.exp_avg", the
/// first moment of parameter 3) and integer counters ("3.step", "steps").
struct OptimizerState {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::int64_t> counters;
};

/// A moving average of the parameters (Recipe::ema, Recipe::swa), updated once per optimizer step
/// applied: never per micro-batch, never on a skipped step.
struct WeightAverage {
  enum class Kind { ema, swa };
  Kind kind = Kind::ema;
  /// EMA: avg = decay avg + (1 - decay) w.
  double decay = 0.999;
  /// EMA: the decay after n updates is min(decay, (1 + n) / (10 + n)) (TensorFlow's
  /// ExponentialMovingAverage with num_updates), so early weights fade quickly.
  bool warmup = false;
  /// SWA: the equal average of the weights after every optimizer step from this one on (counted
  /// from 1, as the schedule's steps are).
  std::int64_t start = 1;
  /// fit's validation runs on the averaged weights (Keras's use_ema).
  bool validate = true;
  /// When fit ends, the model's weights become the average (Keras's use_ema without an
  /// ema_overwrite_frequency), so that predict, evaluate and save use it.
  bool overwrite_at_end = true;
  /// EMA: every this many updates of the average the parameters are set to it, and training goes
  /// on from there (Keras's ema_overwrite_frequency, here counted in optimizer steps applied); 0:
  /// never during training.
  std::int64_t overwrite_every = 0;
  friend bool operator==(const WeightAverage&, const WeightAverage&) = default;
};

class Optimizer : NonCopyable {
 public:
  explicit Optimizer(std::vector<Tensor> parameters, double lr);
  virtual ~Optimizer() = default;

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
  /// Names the parameters ("0.weight"), for options that choose parameters by name (LARS and
  /// LAMB's `exclude`); a model names them when it creates its optimizer.
  void set_parameter_names(std::vector<std::string> names);
  /// Parameter i's name, or "" when the parameters were not named.
  std::string parameter_name(std::size_t i) const { return i < names_.size() ? names_[i] : std::string{}; }
  /// "SGD(lr=0.001, momentum=0.9)".
  virtual std::string str() const = 0;
  /// Moves the optimizer's state tensors to `device` (the model moved there).
  virtual void move_state_to(Device /*device*/) {}

  /// Keeps a moving average of the parameters, updated at the end of every step() (so once per
  /// optimizer step applied, whatever the accumulation); an EMA starts from the weights before the
  /// first step, an SWA from those after step `start`. Its tensors count as optimizer state and are
  /// in state().
  void keep_average(const WeightAverage& average);
  /// The averaged parameters, one per parameter (empty before the average starts or without one).
  const std::vector<Tensor>& average() const { return average_tensors_; }
  /// Updates of the average so far.
  std::int64_t average_updates() const { return average_updates_; }
  /// Exchanges the parameters' values with the average's (a second call restores them); nothing
  /// without an average.
  void swap_average();
  /// Sets the parameters to the average (which stays as it is); nothing without an average.
  void load_average_into_parameters();
  /// Moves the average's tensors to `device` (the model moved there, with move_state_to).
  void move_average_to(Device device);

  /// The state to continue from in a checkpoint (CPU or device tensors, not copies: save them
  /// before the next step).
  OptimizerState state() const;
  /// Continues from a saved state. Checks every name and shape against the parameters first and
  /// throws ValueError listing all problems, changing nothing; the tensors are copied onto the
  /// parameters' devices.
  void load_state(const OptimizerState& state);

 protected:
  /// An optimizer of your own overrides these two to be checkpointed (the step count is kept by
  /// the base class); the defaults throw NotSupported. restore_state must check everything
  /// before changing anything (see check_state_tensor).
  virtual void save_state(OptimizerState& state) const;
  virtual void restore_state(const OptimizerState& state);
  /// The tensor `name` of `state` when it has `like`'s shape and float32 dtype; otherwise adds a
  /// line to `problems` (or, absent and `required`, says it is missing) and returns undefined.
  static Tensor check_state_tensor(const OptimizerState& state, const std::string& name, const Tensor& like,
                                   bool required, std::vector<std::string>& problems);
  /// A copy of `saved` on `like`'s device, counted as optimizer state.
  static Tensor adopt_state_tensor(const Tensor& saved, const Tensor& like);
  /// Throws ValueError for a non-empty `problems`, naming the optimizer; adds the names of the
  /// state tensors no parameter claimed.
  void throw_state_problems(const OptimizerState& state, const std::vector<std::string>& claimed,
                            std::vector<std::string> problems) const;

 protected:
  /// Updates parameter `index` from `grad`.
  virtual void update(std::size_t index, const Tensor& param, const Tensor& grad) = 0;
  /// Updates the parameters at `indices` (those with a gradient, all on one device). The default
  /// calls update() for each; built-in optimizers update them together, in one multi-tensor
  /// launch on a GPU.
  virtual void update_all(const std::vector<std::size_t>& indices);

 protected:
  std::vector<Tensor> parameters_;
  std::vector<std::string> names_;
  double lr_;
  std::int64_t steps_ = 0;

 private:
  void start_average();
  void update_average();
  /// Takes the average's entries out of `state` (checked against the parameters) before the
  /// optimizer's own restore_state sees it; throws ValueError naming what does not fit.
  OptimizerState take_average(const OptimizerState& state, std::vector<Tensor>& average, std::int64_t& updates) const;
  std::optional<WeightAverage> average_options_;
  std::vector<Tensor> average_tensors_;
  std::int64_t average_updates_ = 0;
};

/// The weight average in the parameters for its scope, the training weights put back after (also
/// when an exception leaves it): validating or saving the average. Nothing when `active` is false
/// or the average has not started.
class AverageInParameters : NonCopyable {
 public:
  AverageInParameters(Optimizer& optimizer, bool active)
      : optimizer_(active && !optimizer.average().empty() ? &optimizer : nullptr) {
    if (optimizer_ != nullptr) optimizer_->swap_average();
  }
  ~AverageInParameters() {
    if (optimizer_ != nullptr) optimizer_->swap_average();
  }

 private:
  Optimizer* optimizer_;
};

/// What any optimizer configuration provides; user-defined optimizers satisfy it too.
template <class T>
concept OptimizerConfig = requires(const T& config, std::vector<Tensor> parameters) {
  { config.create(parameters) } -> std::convertible_to<std::unique_ptr<Optimizer>>;
  { config.str() } -> std::convertible_to<std::string>;
};

/// A copyable holder of any optimizer configuration. Two holders compare equal when they hold the
/// same type with equal values (types without operator== compare by str()).
class AnyOptimizer {
 public:
  AnyOptimizer() = default;
  template <OptimizerConfig T>
  AnyOptimizer(T config)  // NOLINT: implicit on purpose, so compile() takes any configuration
      : impl_(std::make_shared<Held<T>>(std::move(config))) {}

  bool defined() const { return impl_ != nullptr; }
  std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const { return impl_->create(std::move(parameters)); }
  std::string str() const { return impl_ ? impl_->str() : std::string{"(no optimizer)"}; }
  /// The configuration held when it is a T (optim::SGD, optim::Adam), else null.
  template <class T>
  const T* get() const {
    const auto* model = dynamic_cast<const Held<T>*>(impl_.get());
    return model != nullptr ? &model->config : nullptr;
  }
  /// State tensors the optimizer keeps per parameter, each of the parameter's size (SGD with
  /// momentum 1, Adam 2, with amsgrad 3), for memory plans; nullopt for a configuration that does
  /// not say (a `state_tensors()` member tells).
  std::optional<int> state_tensors() const { return impl_ ? impl_->state_tensors() : std::nullopt; }
  friend bool operator==(const AnyOptimizer& a, const AnyOptimizer& b) {
    if (!a.impl_ || !b.impl_) return a.impl_ == b.impl_;
    return a.impl_->equals(*b.impl_);
  }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual std::unique_ptr<Optimizer> create(std::vector<Tensor> parameters) const = 0;
    virtual std::string str() const = 0;
    virtual std::optional<int> state_tensors() const = 0;
    virtual bool equals(const Concept& other) const = 0;
  };
  template <class T>
  struct Held final : Concept {
    explicit Held(T c) : config(std::move(c)) {}
    std::unique_ptr<Optimizer> create(std::vector<Tensor> p) const override { return config.create(std::move(p)); }
    std::string str() const override { return config.str(); }
    std::optional<int> state_tensors() const override {
      if constexpr (requires { config.state_tensors(); }) return config.state_tensors();
      else return std::nullopt;
    }
    bool equals(const Concept& other) const override {
      const auto* o = dynamic_cast<const Held<T>*>(&other);
      if (o == nullptr) return false;
      if constexpr (std::equality_comparable<T>) return config == o->config;
      else return config.str() == o->config.str();
    }
    T config;
  };
  std::shared_ptr<const Concept> impl_;
};

/// What an options struct's create() returns: the options checked (ValueError naming the one out
/// of range), then the optimizer `O` made from them.
template <class O, class Options>
std::unique_ptr<Optimizer> make_optimizer(const Options& options, std::vector<Tensor> parameters) {
  options.validate();
  return std::make_unique<O>(std::move(parameters), options);
}

/// An optimizer made from the options struct `Options` (optim::SGD, optim::Lion) over `Base`: it
/// keeps them, and str() writes them with the learning rate it has now.
template <class Options, class Base = Optimizer>
class ConfiguredOptimizer : public Base {
 public:
  std::string str() const override {
    Options now = config_;
    now.lr = this->lr_;
    return now.str();
  }

 protected:
  /// `base_arguments` follow the parameters and the learning rate in Base's constructor.
  template <class... BaseArguments>
  ConfiguredOptimizer(std::vector<Tensor> parameters, const Options& config, BaseArguments&&... base_arguments)
      : Base(std::move(parameters), config.lr, std::forward<BaseArguments>(base_arguments)...), config_(config) {}
  Options config_;
};

}  // namespace accrue::optim
