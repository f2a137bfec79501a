#include "early_stopping.hpp"

#include <nlohmann/json.hpp>

#include "../json_state.hpp"
#include "../model.hpp"
#include "../../framework/autograd/autograd.hpp"
#include "../../framework/core/log.hpp"

namespace accrue::callbacks {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : options_(std::move(options)), best_(options_.monitor, options_.mode, options_.min_delta, "EarlyStopping") {
  ACCRUE_CHECK(options_.patience >= 0, "EarlyStopping: patience must be >= 0, got {}", options_.patience);
}

void EarlyStopping::on_train_begin(TrainingContext& context) {
  context_ = &context;
  best_.resolve(context.log_directions);
  best_.set_best(options_.baseline);
  best_epoch_.reset();
  stopped_epoch_.reset();
  wait_ = 0;
  best_weights_.clear();
}

void EarlyStopping::on_epoch_end(int epoch, Logs& logs) {
  if (epoch < options_.start_from_epoch) return;
  const auto value = logs.get(options_.monitor);
  ACCRUE_CHECK(value.has_value(), "EarlyStopping monitors '{}', which the epoch's logs do not have ({}); pass "
                                  "validation data or monitor \"loss\"",
               options_.monitor, logs.str());
  ++wait_;
  if (best_.improves(*value)) {
    best_.set_best(*value);
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
  log::info("EarlyStopping: restored the weights of epoch {} ({} = {:.4f})", *best_epoch_ + 1, options_.monitor, *best_.best());
}

std::optional<CallbackState> EarlyStopping::state() const {
  nlohmann::json j{{"wait", wait_}};
  if (best_.best()) j["best"] = *best_.best();
  if (best_epoch_) j["best_epoch"] = *best_epoch_;
  if (stopped_epoch_) j["stopped_epoch"] = *stopped_epoch_;
  CallbackState state{j.dump(), {}};
  for (std::size_t i = 0; i < best_weights_.size(); ++i) state.tensors.emplace_back(std::to_string(i), best_weights_[i]);
  return state;
}

void EarlyStopping::load_state(const CallbackState& state) {
  detail::read_json_state("EarlyStopping", state.text, [&](const nlohmann::json& j) {
    const int wait = detail::json_integer<int>(j.at("wait"), "EarlyStopping: wait");
    const auto best = j.contains("best") ? std::optional{j["best"].get<double>()} : std::nullopt;
    const auto best_epoch = j.contains("best_epoch") ? std::optional{detail::json_integer<int>(j["best_epoch"], "EarlyStopping: best_epoch")} : std::nullopt;
    const auto stopped = j.contains("stopped_epoch") ? std::optional{detail::json_integer<int>(j["stopped_epoch"], "EarlyStopping: stopped_epoch")} : std::nullopt;
    std::vector<Tensor> weights;
    const auto params = context_->model->parameters();
    if (!state.tensors.empty()) {
      ACCRUE_CHECK(state.tensors.size() == params.size(), "EarlyStopping: the saved best weights are {} tensors, the model has {}",
                   state.tensors.size(), params.size());
      for (std::size_t i = 0; i < params.size(); ++i) {
        ACCRUE_CHECK(state.tensors[i].second.shape() == params[i].shape(),
                     "EarlyStopping: saved best weight {} has shape {}, the parameter {}", i, state.tensors[i].second.shape(),
                     params[i].shape());
        weights.push_back(state.tensors[i].second.to(params[i].device()));
      }
    }
    wait_ = wait;
    best_.set_best(best);
    best_epoch_ = best_epoch;
    stopped_epoch_ = stopped;
    best_weights_ = std::move(weights);
  });
}

}  // namespace accrue::callbacks
