#include "run_callbacks.hpp"

#include <algorithm>

namespace accrue::detail {

RunCallbacks::RunCallbacks(const TrainerOptions& options, bool speaks) {
  if (options.verbose > 0 && speaks) {
    progress_.emplace(callbacks::ProgressBarOptions{
        .mode = options.verbose == 2 ? callbacks::ProgressBarOptions::Mode::lines
                                     : callbacks::ProgressBarOptions::Mode::automatic});
    all_.push_back(&*progress_);
  }
  if (options.explain > 0 && speaks) {
    explain_.emplace(callbacks::ExplainOptions{.windows = options.explain});
    all_.push_back(&*explain_);
  }
  for (const CallbackHandle& c : options.callbacks) all_.push_back(c.get());
  track_grad_norm_ =
      options.track_grad_norm || std::any_of(all_.begin(), all_.end(), [](const Callback* c) { return c->needs_grad_norm(); });
}

}  // namespace accrue::detail
