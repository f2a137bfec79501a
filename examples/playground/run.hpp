#pragma once
// One playground run, in the process that trains it (`playground --worker`): the model its settings
// build, its memory plan, and fit with a callback that reports every micro-batch. The server starts
// that process per run (playground_server.hpp) and relays what it prints.

#include <accrue/accrue.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <istream>

#include "settings.hpp"

namespace playground {

/// What a run reports to and hears from whoever started it.
class RunHost {
 public:
  virtual ~RunHost() = default;
  /// One event of the run ("run", "micro_batch"), to pass on as it is.
  virtual void publish(const json& event) = 0;
  /// At each micro-batch's end: waits `pace`, and while paused; true when the run must end now.
  virtual bool should_stop(std::chrono::milliseconds pace) = 0;
};

/// The model `settings` describe, compiled, on `device`, its parameters drawn from settings.seed.
accrue::Sequential build_model(const Settings& settings, accrue::Device device);

/// The memory plan of `settings` against its cap (the answer of POST /api/plan): by category, the
/// peak, whether it fits and, when it does not, the message an out-of-memory error would give and
/// the micro-batch it advises.
json plan(const Settings& settings, accrue::Device device);

/// The data a run trains on: `train`, with half its labels hidden (-100) at random when
/// settings.uneven, so that micro-batches count different numbers of samples as sequences of
/// different lengths count different numbers of tokens.
accrue::Dataset training_data(const accrue::Dataset& train, const Settings& settings);

/// verify_accumulation of the run's first window under both normalizations, in evaluation mode:
/// {"per_window": relative difference, "per_micro_batch": ..., "units": each micro-batch's}.
json accumulation_check(accrue::Sequential& model, const accrue::Dataset& data, const Settings& settings);

/// Trains run `run` of `settings` on `train`, publishing its events to `host` and evaluating on
/// `validation` about 20 times; returns its "end" event (finished, stopped or failed, with the
/// error's message). The cap is set on the device while it runs: one run per process.
json train(const accrue::Dataset& train, const accrue::Dataset& validation, accrue::Device device, std::int64_t run,
           const Settings& settings, RunHost& host);

/// The worker's life: the settings on the first line of `control`, then "pause", "resume" and
/// "stop" lines (its end stops the run too); every event, the "end" last, as a line of JSON on
/// `events`.
void run_worker(const accrue::Dataset& train, const accrue::Dataset& validation, accrue::Device device, std::int64_t run, std::istream& control,
               std::FILE* events);

}  // namespace playground
