#pragma once
// Callbacks: code that runs at the boundaries of training, as Keras's and Lightning's do: the run,
// each epoch, each micro-batch and each optimizer step. Derive from Callback and override the hooks
// you need; pass instances in FitOptions::callbacks by value (`callbacks::CSVLogger{"log.csv"}`) or
// as a shared_ptr to keep access to them. The built-in callbacks live in dsl/callbacks/.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../framework/amp/grad_scaler.hpp"
#include "../framework/core/dtype.hpp"
#include "../framework/core/memory.hpp"
#include "../framework/core/tensor.hpp"
#include "../framework/training/logs.hpp"
#include "../framework/training/step_record.hpp"
#include "memory_plan.hpp"

namespace accrue {

class Model;
class StepPlan;
struct PlanChoice;
namespace distributed {
struct ReducerStats;
}  // namespace distributed
class LrSchedule;
namespace optim {
class Optimizer;
class Recipe;
}  // namespace optim

/// What a callback sees of the run, from on_train_begin on.
struct TrainingContext {
  Model* model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  const optim::Recipe* recipe = nullptr;
  const StepPlan* plan = nullptr;
  const LrSchedule* schedule = nullptr;
  int epochs = 0;
  std::int64_t batch_size = 0;   // the micro-batch (of each process)
  /// The processes of a distributed run (1 otherwise); the plan's micro-batches are global:
  /// batch_size x processes samples. Callbacks that write files do so on rank 0 only.
  int processes = 1;
  int rank = 0;
  /// The processes again, with this one's rank, what they shard and the bucket size: what this
  /// process's memory plan is for (Model::memory_plan).
  DataParallel data_parallel;
  /// A distributed run's gradient reduction: windows, buckets started during backward, and the
  /// time the training thread waited for them (null alone).
  const distributed::ReducerStats* reduction = nullptr;
  std::int64_t samples_per_epoch = 0;
  /// Over sequences, the tokens the loss counts in the training set (not its ignore_index); 0
  /// otherwise.
  std::int64_t tokens_per_epoch = 0;
  std::int64_t steps_per_epoch = 0;  // micro-batches per epoch
  /// Whether the training data is read on background threads (not in memory); the progress line
  /// then shows the share of the epoch spent waiting for it (StepRecord::data_wait).
  bool reads_data_ahead = false;
  /// How the loss weighs samples (class_weight, the dataset's sample weights), for the banner;
  /// empty when it does not.
  std::string sample_weighting;
  /// What the memory planner considered and chose under a memory budget (null without one).
  const PlanChoice* memory_choice = nullptr;
  /// The optimizer's learning rate before any schedule.
  double base_lr = 0.0;
  /// Mixed precision: the low-precision type, and the loss scaler when losses are scaled.
  std::optional<DType> amp_dtype;
  const GradScaler* scaler = nullptr;
  /// Which way each value the run logs gets better ("loss" lower, "val_auc" higher), from the
  /// compiled metrics: what a callback monitoring one in mode "auto" follows.
  LogDirections log_directions;
  /// A factor on top of the schedule; ReduceLROnPlateau lowers it.
  double lr_factor = 1.0;
  std::int64_t optimizer_steps = 0;
  /// Memory on the model's device during the current epoch's training (peaks since the epoch
  /// began; validation not included), set before on_epoch_end.
  MemoryStats epoch_memory;
  /// Ask the loop to stop after the current optimizer step (EarlyStopping).
  void stop() { stop_requested = true; }
  bool stop_requested = false;
  /// True when the run continues from a training checkpoint: callbacks' load_state has run, and
  /// training goes on from `initial_epoch` (inside it when the checkpoint was taken mid-epoch).
  bool resumed = false;
  int initial_epoch = 0;
};

/// What a training checkpoint keeps of a callback: any text (JSON for the built-in ones) and
/// tensors, handed back to load_state as they were.
struct CallbackState {
  std::string text;
  std::vector<std::pair<std::string, Tensor>> tensors;
};

/// What to do with a micro-batch whose loss is inf or NaN (see callbacks::NanGuard).
enum class NonFiniteAction {
  /// Throw NonFiniteError naming the epoch and micro-batch (the default without a guard).
  raise,
  /// Drop the whole window: no backward for the rest of it, no step, gradients zeroed.
  skip_window,
  /// Log a warning and go on; an inf or NaN gradient then skips the step if it is checked.
  warn,
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(TrainingContext& /*context*/) {}
  /// `epoch` counts from 0, as in Keras.
  virtual void on_epoch_begin(int /*epoch*/) {}
  /// After each micro-batch, with the epoch's running logs.
  virtual void on_micro_batch_end(const StepRecord& /*record*/, const Logs& /*running*/) {}
  /// After each window closes, applied or skipped.
  virtual void on_optimizer_step(const StepRecord& /*record*/) {}
  /// After each epoch and its validation; a callback may add values to the logs.
  virtual void on_epoch_end(int /*epoch*/, Logs& /*logs*/) {}
  virtual void on_train_end(const Logs& /*last_epoch*/) {}
  /// A micro-batch's loss is inf or NaN: the first callback that answers decides; none means raise.
  virtual std::optional<NonFiniteAction> on_nonfinite_loss(const StepRecord& /*record*/) { return std::nullopt; }
  /// True when this callback needs every step's gradient norm (StepRecord::grad_norm_before and
  /// grad_norm_after) even without clipping: fit then computes it, as track_grad_norm asks.
  virtual bool needs_grad_norm() const { return false; }

  /// What a training checkpoint keeps of this callback (nullopt: nothing, it starts afresh on
  /// resume). Called between micro-batches and after on_epoch_end.
  virtual std::optional<CallbackState> state() const { return std::nullopt; }
  /// Hands back what state() returned, right after on_train_begin of the resumed run. Throw
  /// ValueError for a state you cannot take: fit stops with it (the model already holds the
  /// checkpoint's weights then).
  virtual void load_state(const CallbackState& /*state*/) {}
};

/// Holds a callback for FitOptions. A callback you name is used where it is (as Keras's callbacks
/// are): after fit, `stop.stopped_epoch()` is the run's, and it must outlive the run. A temporary
/// (`callbacks::CSVLogger{"log.csv"}`) is moved in and a shared_ptr shared.
class CallbackHandle {
 public:
  template <class T>
    requires std::derived_from<std::decay_t<T>, Callback>
  CallbackHandle(T&& callback)  // NOLINT: implicit on purpose
      : ptr_(held(std::forward<T>(callback))) {}
  template <class T>
    requires std::derived_from<T, Callback>
  CallbackHandle(std::shared_ptr<T> callback) : ptr_(std::move(callback)) {}  // NOLINT
  Callback& operator*() const { return *ptr_; }
  Callback* operator->() const { return ptr_.get(); }
  Callback* get() const { return ptr_.get(); }

 private:
  template <class T>
  static std::shared_ptr<Callback> held(T&& callback) {
    using C = std::remove_reference_t<T>;
    // The user's own object, not owned: nothing to delete.
    if constexpr (std::is_lvalue_reference_v<T> && !std::is_const_v<C>) return std::shared_ptr<Callback>(&callback, [](Callback*) {});
    else return std::make_shared<std::decay_t<T>>(std::forward<T>(callback));
  }
  std::shared_ptr<Callback> ptr_;
};

namespace callbacks {

/// The functions of a Lambda callback; leave out the hooks you do not need.
struct LambdaHooks {
  std::function<void(TrainingContext&)> train_begin;
  std::function<void(int)> epoch_begin;
  std::function<void(const StepRecord&, const Logs&)> micro_batch_end;
  std::function<void(const StepRecord&)> optimizer_step;
  std::function<void(int, Logs&)> epoch_end;
  std::function<void(const Logs&)> train_end;
};

/// A callback from functions: `callbacks::Lambda{{.epoch_end = [](int e, Logs& l) {...}}}`.
class Lambda final : public Callback {
 public:
  explicit(false) Lambda(LambdaHooks hooks) : hooks_(std::move(hooks)) {}
  void on_train_begin(TrainingContext& context) override {
    if (hooks_.train_begin) hooks_.train_begin(context);
  }
  void on_epoch_begin(int epoch) override {
    if (hooks_.epoch_begin) hooks_.epoch_begin(epoch);
  }
  void on_micro_batch_end(const StepRecord& record, const Logs& running) override {
    if (hooks_.micro_batch_end) hooks_.micro_batch_end(record, running);
  }
  void on_optimizer_step(const StepRecord& record) override {
    if (hooks_.optimizer_step) hooks_.optimizer_step(record);
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    if (hooks_.epoch_end) hooks_.epoch_end(epoch, logs);
  }
  void on_train_end(const Logs& logs) override {
    if (hooks_.train_end) hooks_.train_end(logs);
  }

 private:
  LambdaHooks hooks_;
};

}  // namespace callbacks
}  // namespace accrue
