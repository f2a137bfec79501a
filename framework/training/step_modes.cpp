#include "step_modes.hpp"

#include "../autograd/autograd.hpp"
#include "../distributed/reducer.hpp"

namespace accrue {

StepModes::StepModes(const StepModesOptions& options) : options_(options) {
  if (options.keep_packs) packs_.emplace();
  if (options.defer_weight_gradients) deferred_.emplace();
}

StepModes::~StepModes() = default;

StepModes::Pass::Pass(const StepModesOptions& o, bool forward, bool closes_window) : sharing_(o.statistics_group) {
  if (forward) autocast_.emplace(o.autocast);
  if (forward || o.reducer == nullptr) return;
  o.reducer->begin_backward();
  if (closes_window || o.reducer->reduces_each_micro_batch()) observing_.emplace(*o.reducer);
}

StepModes::Pass StepModes::backward(bool closes_window) {
  if (deferred_) deferred_->set_closing(closes_window);
  return Pass{options_, false, closes_window};
}

}  // namespace accrue
