#include "accrue/dsl/callbacks/early_stopping.hpp"

#include "accrue/dsl/sequential.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/log.hpp"

namespace accrue::callbacks {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  ACCRUE_CHECK(options_.patience >= 0, "EarlyStopping: patience must be >= 0, got {}", options_.patience);
  maximize_ = higher_is_better(options_.monitor, options_.mode, "EarlyStopping");
}

void EarlyStopping::on_train_begin(TrainingContext& context) {
  context_ = &context;
  best_ = options_.baseline;
  best_epoch_.reset();
  stopped_epoch_.reset();
  wait_ = 0;
  best_weights_.clear();
}

bool EarlyStopping::improved(double value) const {
  if (!best_) return true;
  // Keras: min_delta counts towards improvement in the monitored direction.
  return maximize_ ? value - options_.min_delta > *best_ : value + options_.min_delta < *best_;
}

void EarlyStopping::on_epoch_end(int epoch, Logs& logs) {
  if (epoch < options_.start_from_epoch) return;
  const auto value = logs.get(options_.monitor);
  ACCRUE_CHECK(value.has_value(), "EarlyStopping monitors '{}', which the epoch's logs do not have ({}); pass "
                                  "validation data or monitor \"loss\"",
               options_.monitor, logs.str());
  ++wait_;
  if (improved(*value)) {
    best_ = *value;
    best_epoch_ = epoch;
    wait_ = 0;
    if (options_.restore_best_weights) {
      const NoGradGuard no_grad;
      best_weights_.clear();
      for (const Tensor& p : context_->model->parameters()) best_weights_.push_back(p.detach().clone());
    }
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    context_->stop();
  }
}

void EarlyStopping::on_train_end(const Logs&) {
  if (!options_.restore_best_weights || best_weights_.empty() || !stopped_epoch_) return;
  const NoGradGuard no_grad;
  const auto params = context_->model->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) Tensor{params[i]}.copy_(best_weights_[i]);
  log::info("EarlyStopping: restored the weights of epoch {} ({} = {:.4f})", *best_epoch_ + 1, options_.monitor, *best_);
}

}  // namespace accrue::callbacks
