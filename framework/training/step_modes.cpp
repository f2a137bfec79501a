#include "accrue/framework/training/step_modes.hpp"

#include "accrue/framework/autocast.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/distributed/reducer.hpp"
#include "accrue/framework/distributed/sync_batch_norm.hpp"

namespace accrue {

StepModes::StepModes(const StepModesOptions& options) : options_(options) {
  if (options.keep_packs) packs_.emplace();
  if (options.defer_weight_gradients) deferred_.emplace();
}

StepModes::~StepModes() = default;

StepModes::Pass::Pass(const StepModesOptions& o, bool forward, bool closes_window)
    : sharing_(std::make_unique<distributed::ShareBatchStatistics>(o.statistics_group)) {
  if (forward) autocast_ = std::make_unique<AutocastGuard>(o.autocast);
  if (!forward && closes_window && o.reducer != nullptr) observing_ = std::make_unique<ObserveLeafGradients>(*o.reducer);
}

StepModes::Pass::~Pass() {
  // Off in the reverse order of on.
  observing_.reset();
  autocast_.reset();
  sharing_.reset();
}

StepModes::Pass StepModes::backward(bool closes_window) {
  if (deferred_) deferred_->set_closing(closes_window);
  return Pass{options_, false, closes_window};
}

}  // namespace accrue
