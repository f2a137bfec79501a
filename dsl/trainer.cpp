// Trainer and Model::fit: the options' checks and the plan; the loop is TrainingRun's.

#include "trainer.hpp"

#include <cmath>

#include "fit/training_run.hpp"

namespace accrue {

Trainer::Trainer(TrainerOptions options) : options_(std::move(options)) {
  ACCRUE_CHECK(options_.epochs >= 1, "epochs must be at least 1, got {}", options_.epochs);
  ACCRUE_CHECK(options_.batch_size >= 1, "batch_size must be at least 1, got {}", options_.batch_size);
  ACCRUE_CHECK(options_.verbose >= 0 && options_.verbose <= 2, "verbose must be 0, 1 or 2, got {}", options_.verbose);
  ACCRUE_CHECK(options_.explain >= 0, "explain must be >= 0 (windows to explain), got {}", options_.explain);
  if (options_.accumulate.is_set()) options_.accumulate.validate_for(options_.batch_size);
  const CheckpointOptions& c = options_.checkpoint;
  ACCRUE_CHECK(c.every_micro_batches >= 0, "checkpoint.every_micro_batches must be >= 0, got {}", c.every_micro_batches);
  ACCRUE_CHECK(std::isfinite(c.every_seconds) && c.every_seconds >= 0, "checkpoint.every_seconds must be >= 0, got {}",
               c.every_seconds);
  ACCRUE_CHECK(c.keep >= 1, "checkpoint.keep must be at least 1, got {}", c.keep);
  ACCRUE_CHECK(!c.dir.empty() || (c.every_micro_batches == 0 && c.every_seconds == 0),
               "checkpoint: every_micro_batches or every_seconds is set but dir is empty; name a folder");
}

StepPlan Trainer::plan(const Model& model, std::int64_t train_size) const {
  return detail::plan_run(model, options_, train_size, options_.batch_size, 1);
}

History Trainer::fit(Model& model, const Dataset& train, std::optional<Dataset> validation) {
  return fit(model, train, Run{.validation = std::move(validation)});
}

History Trainer::fit(Model& model, const Dataset& train, Run run) {
  detail::TrainingRun training{model, train, run.validation ? run.validation : options_.validation, options_,
                               run.resume_from.empty() ? options_.resume_from : run.resume_from};
  distributed::Communicator& processes = training.communicator();
  if (processes.size() == 1) return training.fit();
  // An error on one rank of a distributed run would leave the others waiting in a collective call
  // for ever: it ends every process of the run, with this rank's message.
  try {
    return training.fit();
  } catch (const Interrupted&) {
    throw;  // every process stops at the same window, as they agreed
  } catch (const std::exception& e) {
    processes.abort(e.what());
  }
}

History Model::fit(const Dataset& train, const FitOptions& options) {
  return Trainer{options}.fit(*this, train, options.validation);
}

}  // namespace accrue
