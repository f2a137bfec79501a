// Memory: the micro-batch the planner picks for a budget, the machine's memory checked against the
// plan, and what happens when an allocation fails (advice, or backing off to smaller micro-batches).

#include <algorithm>

#include "training_run.hpp"
#include "../../framework/core/log.hpp"

namespace accrue::detail {

namespace {

// The memory a run must fit in (a limit, or what the machine has), as messages name it: "the limit
// of 5.00 MiB", and what to do when even a micro-batch of 1 does not fit.
struct MemoryBudget {
  std::size_t bytes;
  std::string name, remedy;
};

MemoryBudget limit_budget(std::size_t limit) {
  return {limit, fmt::format("the limit of {}", format_bytes(limit)),
          fmt::format("raise the limit of {} or use a smaller model", format_bytes(limit))};
}

// For a run that does not fit in `budget`: the largest micro-batch below the current one that the
// memory plan fits in it beside what else is live, with the accumulation that keeps the effective
// batch.
std::string fitting_advice(const Model& model, std::int64_t micro_batch, std::int64_t effective_batch,
                           std::size_t live_besides_model, std::int64_t read_ahead, const MemoryBudget& budget) {
  if (const std::optional<std::int64_t> m =
          model.fitting_micro_batch(micro_batch, budget.bytes, live_besides_model, read_ahead)) {
    const std::int64_t k = ceil_div(effective_batch, *m);
    return fmt::format("\nMicro-batches of {} with accumulate({}) keep the effective batch of {} and are planned to "
                       "peak at {} (model.memory_plan({}); {} more is live besides the model), within {}.",
                       *m, k, *m * k, format_bytes(model.memory_plan(*m, true, true, read_ahead).peak_total), *m,
                       format_bytes(live_besides_model), budget.name);
  }
  return fmt::format("\nEven a micro-batch of 1 is planned to peak at {} (model.memory_plan(1)) beside {} live: {}.",
                     format_bytes(model.memory_plan(1, true, true, read_ahead).peak_total), format_bytes(live_besides_model),
                     budget.remedy);
}

}  // namespace

// A run whose plan this machine cannot hold is refused with the plan before its first window: the
// kernel would hand the memory out (it overcommits) and end the process once it is filled. Under
// a limit, or backing off on out-of-memory, the allocator's refusal at the limit says it instead.
void TrainingRun::check_machine_memory() const {
  const MemoryStats now = memory_stats(model_.device());
  if (!model_.device().is_cpu() || now.limit != 0 || options_.backoff_on_oom) return;
  const std::optional<std::size_t> available = available_system_memory();
  if (!available) return;
  // What the model holds already is part of the plan; datasets in memory are not.
  const std::size_t held = now.live_of(MemoryCategory::parameters) + now.live_of(MemoryCategory::gradients) +
                           now.live_of(MemoryCategory::optimizer_state);
  const MemoryPlan plan = model_.memory_plan(state_.batch_size, model_.recipe().accumulates(), false, data_.read_ahead());
  if (plan.peak_total <= held + *available) return;
  const std::int64_t effective = state_.batch_size * accumulation_.schedule.steps_at(state_.epoch, 0, state_.batch_size);
  const MemoryBudget machine{held + *available,
                             fmt::format("the {} this machine has for the model", format_bytes(held + *available)),
                             "use a smaller model"};
  throw OutOfMemory(fmt::format("model.memory_plan({}) peaks at {}, but this machine has {} available besides the {} the "
                                "model holds: the system would end the process once training filled it.{}\n{}",
                                state_.batch_size, format_bytes(plan.peak_total), format_bytes(*available),
                                format_bytes(held), fitting_advice(model_, state_.batch_size, effective, 0, data_.read_ahead(), machine),
                                plan.str()));
}

// Out of memory in the micro-batch of `record`: the window's partial gradients go (parameters and
// optimizer state are as before it). With backoff_on_oom the window starts again from its first
// sample with micro-batches half as large and twice as many per window; returns the epoch's
// windows from that one on. Otherwise rethrows with where it happened and the micro-batch the
// memory plan says would fit.
std::deque<EpochWindow> TrainingRun::back_off(OutOfMemory& e, const StepRecord& record) {
  optimizer_->zero_grad();
  if (DeferredWeightGradients* deferred = modes_->deferred()) deferred->discard();
  state_.pending.clear();
  const std::int64_t micro = state_.batch_size;
  if (!options_.backoff_on_oom || micro < 2 || micro % 2 != 0) {
    e.prepend(error_prefix(record));
    if (options_.backoff_on_oom) e.append(fmt::format("\nbackoff_on_oom cannot halve a micro-batch of {}.", micro));
    if (const std::size_t limit = memory_stats(model_.device()).limit; limit > 0)
      e.append(fitting_advice(model_, std::min(micro, train_.size()), data_.plan().max_effective_batch(), live_besides_model_,
                              data_.read_ahead(), limit_budget(limit)));
    throw;
  }
  // The window's first sample in this epoch (a window carried over the epoch's end starts it).
  const std::int64_t window_start = std::max<std::int64_t>(record.micro_batch - record.position, 0) * micro;
  state_.batch_size = micro / 2;
  state_.accumulation_factor *= 2;
  replan();
  const std::vector<EpochWindow> windows = data_.begin_epoch(state_.epoch, window_start / state_.batch_size);
  ACCRUE_ASSERT(!windows.empty());
  const MicroBatchSlot& first = windows.front().micro_batches.front();
  log::warning("out of memory at a micro-batch of {} (epoch {}, optimizer step {}): backing off to micro-batches of {} "
               "accumulated {} per step (effective batch {}); redoing the window",
               micro, state_.epoch + 1, context_.optimizer_steps + 1, state_.batch_size, first.window_micro_batches,
               first.window_samples);
  return {windows.begin(), windows.end()};
}

}  // namespace accrue::detail
