#pragma once
// The callbacks of a run (fit's TrainingRun holds them), in the order each event reaches them: the
// progress bar and the explanations fit adds on the process that speaks for the run, then the
// user's, with whether any of them needs the gradient's norm.

#include <optional>
#include <vector>

#include "../callbacks.hpp"
#include "../callbacks/explain.hpp"
#include "../callbacks/progress_bar.hpp"
#include "../fit_options.hpp"

namespace accrue::detail {

class RunCallbacks {
 public:
  /// `speaks`: this process prints for the run (one process of a distributed run does).
  RunCallbacks(const TrainerOptions& options, bool speaks);
  RunCallbacks(const RunCallbacks&) = delete;  // the list points at its own members
  RunCallbacks& operator=(const RunCallbacks&) = delete;

  std::vector<Callback*>::const_iterator begin() const { return all_.begin(); }
  std::vector<Callback*>::const_iterator end() const { return all_.end(); }
  /// Whether the window's close computes the gradient norm: the options or a callback ask for it.
  bool track_grad_norm() const { return track_grad_norm_; }

 private:
  std::optional<callbacks::ProgressBar> progress_;
  std::optional<callbacks::Explain> explain_;
  std::vector<Callback*> all_;
  bool track_grad_norm_ = false;
};

}  // namespace accrue::detail
