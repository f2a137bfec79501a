#pragma once
// Callbacks: code that runs at the boundaries of training (start, epoch, batch, end), as Keras's.
// Derive from Callback and override the hooks you need; pass instances in FitOptions::callbacks
// by value (`callbacks::ProgressBar{}`) or as a shared_ptr to keep access to them.

#include <cstdint>
#include <functional>
#include <memory>

#include "accrue/dsl/logs.hpp"

namespace accrue {

/// What a callback knows about the run that starts.
struct TrainInfo {
  int epochs = 0;
  /// Batches per epoch.
  std::int64_t steps_per_epoch = 0;
  std::int64_t samples_per_epoch = 0;
  std::int64_t batch_size = 0;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(const TrainInfo& /*info*/) {}
  /// `epoch` counts from 0, as in Keras.
  virtual void on_epoch_begin(int /*epoch*/) {}
  /// After each batch, with the running means of the epoch so far.
  virtual void on_batch_end(std::int64_t /*batch*/, const Logs& /*logs*/) {}
  /// After each epoch (and its validation), with the epoch's logs.
  virtual void on_epoch_end(int /*epoch*/, const Logs& /*logs*/) {}
  virtual void on_train_end(const Logs& /*last_epoch*/) {}
};

/// Holds a callback for FitOptions: from a value (copied in) or a shared_ptr (shared).
class CallbackHandle {
 public:
  template <class T>
    requires std::derived_from<std::decay_t<T>, Callback>
  CallbackHandle(T&& callback)  // NOLINT: implicit on purpose
      : ptr_(std::make_shared<std::decay_t<T>>(std::forward<T>(callback))) {}
  template <class T>
    requires std::derived_from<T, Callback>
  CallbackHandle(std::shared_ptr<T> callback) : ptr_(std::move(callback)) {}  // NOLINT
  Callback& operator*() const { return *ptr_; }
  Callback* operator->() const { return ptr_.get(); }
  Callback* get() const { return ptr_.get(); }

 private:
  std::shared_ptr<Callback> ptr_;
};

namespace callbacks {

/// The functions of a Lambda callback; leave out the hooks you do not need.
struct LambdaHooks {
  std::function<void(const TrainInfo&)> train_begin;
  std::function<void(int)> epoch_begin;
  std::function<void(std::int64_t, const Logs&)> batch_end;
  std::function<void(int, const Logs&)> epoch_end;
  std::function<void(const Logs&)> train_end;
};

/// A callback from functions: `callbacks::Lambda{{.epoch_end = [](int e, const Logs& l) {...}}}`.
class Lambda final : public Callback {
 public:
  explicit(false) Lambda(LambdaHooks hooks) : hooks_(std::move(hooks)) {}
  void on_train_begin(const TrainInfo& info) override {
    if (hooks_.train_begin) hooks_.train_begin(info);
  }
  void on_epoch_begin(int epoch) override {
    if (hooks_.epoch_begin) hooks_.epoch_begin(epoch);
  }
  void on_batch_end(std::int64_t batch, const Logs& logs) override {
    if (hooks_.batch_end) hooks_.batch_end(batch, logs);
  }
  void on_epoch_end(int epoch, const Logs& logs) override {
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
