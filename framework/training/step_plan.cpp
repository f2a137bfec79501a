#include "step_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "../core/error.hpp"
#include "../core/shape.hpp"

namespace accrue {

StepPlan::StepPlan(const Spec& spec) : spec_(spec) {
  ACCRUE_CHECK(spec.micro_batch >= 1, "batch_size must be at least 1, got {}", spec.micro_batch);
  ACCRUE_CHECK(spec.epochs >= 1, "epochs must be at least 1, got {}", spec.epochs);
  ACCRUE_CHECK(spec.dataset_size >= 1, "the training set is empty");
  spec.schedule.validate_for(spec.micro_batch);
  const std::int64_t n = spec.dataset_size, b = spec.micro_batch;
  per_epoch_ = spec.drop_last ? n / b : ceil_div(n, b);
  ACCRUE_CHECK(per_epoch_ >= 1, "{} samples make no batch of {} with drop_last", n, b);
  samples_per_epoch_ = spec.drop_last ? per_epoch_ * b : n;
  // Every count of the run (micro-batches, windows, steps, samples) is at most this, so no sum
  // below can overflow once it fits.
  std::int64_t run_samples = 0;
  ACCRUE_CHECK(!__builtin_mul_overflow(std::int64_t{spec.epochs}, samples_per_epoch_, &run_samples),
               "{} epochs of {} samples are more samples than a 64-bit count holds; train fewer epochs", spec.epochs,
               samples_per_epoch_);

  const int max_planned = walk_epochs();
  ACCRUE_CHECK(!__builtin_mul_overflow(std::int64_t{max_planned}, b, &max_effective_batch_),
               "a micro-batch of {} accumulated {} times is a larger batch than a 64-bit count holds", b, max_planned);
}

// Epoch by epoch, until an epoch starts as one before it did under the same accumulation: the
// epochs between them then repeat, as many whole turns as the accumulation holds, and are skipped.
// Returns the largest accumulation any window was planned with.
int StepPlan::walk_epochs() {
  const Spec& spec = spec_;
  using Key = std::tuple<bool, int, int, std::int64_t, std::int64_t, std::int64_t>;
  const auto key_of = [](const EpochStart& s) {
    return s.carrying ? Key{true, s.open.planned, s.open.micro_batches, s.open.samples, s.epoch - s.open.first_epoch,
                            s.open.first}
                      : Key{};
  };
  std::map<Key, std::size_t> seen;
  int max_planned = 1;
  const auto note = [&](const Window& w, std::int64_t, std::int64_t) {
    max_planned = std::max(max_planned, w.planned);
    if (w.applied) last_window_samples_ = w.samples;
  };
  EpochStart s;
  AccumulationSchedule::Span span = spec.schedule.span_at(0, 0, spec.epochs);
  while (s.epoch < spec.epochs) {
    if (s.epoch >= span.epoch_end || s.steps >= span.step_end) {
      span = spec.schedule.span_at(static_cast<int>(s.epoch), s.steps, spec.epochs);
      seen.clear();
    }
    const Key key = key_of(s);
    if (const auto it = seen.find(key); it != seen.end()) {
      EpochStart turn = s;
      const EpochStart& from = starts_[it->second];
      turn.epoch -= from.epoch;
      turn.steps -= from.steps;
      turn.windows -= from.windows;
      turn.samples -= from.samples;
      std::int64_t turns = (std::min<std::int64_t>(spec.epochs, span.epoch_end) - s.epoch) / turn.epoch;
      // Every window in the skipped epochs must start before the step where the accumulation changes.
      if (turn.steps > 0 && span.step_end != std::numeric_limits<std::int64_t>::max())
        turns = std::min(turns, (span.step_end - 1 - s.steps) / turn.steps);
      if (turns > 0) {
        cycles_.push_back({s.epoch, s.epoch + turns * turn.epoch, it->second, turn.epoch, turn});
        s = shifted(s, turn, turns);
        seen.clear();
        continue;
      }
    }
    seen[key] = starts_.size();
    starts_.push_back(s);
    s = run_epoch(s, note);
  }
  after_ = s;
  end_ = s;
  if (s.carrying) {  // still open when training ends: applied, normalized by its size
    note(completed(s), 0, 0);
    ++end_.windows;
    ++end_.steps;
    end_.samples += s.open.samples;
  }
  return max_planned;
}

template <class F>
StepPlan::EpochStart StepPlan::run_epoch(const EpochStart& s, F&& closed) const {
  EpochStart next = s;
  ++next.epoch;
  next.carrying = false;
  const int epoch = static_cast<int>(s.epoch);
  bool carried_in = s.carrying;
  for (std::int64_t i = 0; i < per_epoch_;) {
    Window w;
    if (carried_in) {
      w = s.open;
      carried_in = false;
    } else {
      w.first_epoch = epoch;
      w.first = i;
      w.planned = spec_.schedule.steps_at(epoch, next.steps, spec_.micro_batch);
    }
    const std::int64_t first = i;
    const std::int64_t take = std::min<std::int64_t>(w.planned - w.micro_batches, per_epoch_ - i);
    w.micro_batches += static_cast<int>(take);
    w.samples += samples_in(i, take);
    w.last_epoch = epoch;
    i += take;
    if (w.micro_batches < w.planned) {  // cut short by the end of the epoch
      if (spec_.last_window == LastWindow::carry) {
        next.carrying = true;
        next.open = w;
        break;
      }
      if (spec_.last_window == LastWindow::drop) w.applied = false;
    }
    w.index = next.windows++;
    if (w.applied) {
      ++next.steps;
      next.samples += w.samples;
    }
    closed(w, first, take);
  }
  return next;
}

Window StepPlan::completed(const EpochStart& next) const {
  Window w = next.open;
  w.index = next.windows;
  std::int64_t need = w.planned - w.micro_batches;
  std::int64_t remaining = spec_.epochs - next.epoch;  // epochs left to fill it
  const std::int64_t whole = std::min(need / per_epoch_, remaining);
  w.micro_batches += static_cast<int>(whole * per_epoch_);
  w.samples += whole * samples_per_epoch_;
  w.last_epoch += static_cast<int>(whole);
  need -= whole * per_epoch_;
  remaining -= whole;
  if (need > 0 && remaining > 0) {
    w.micro_batches += static_cast<int>(need);
    w.samples += samples_in(0, need);
    ++w.last_epoch;
  }
  return w;
}

StepPlan::EpochStart StepPlan::start_of(std::int64_t epoch) const {
  if (epoch == spec_.epochs) return after_;
  const auto stored = std::partition_point(starts_.begin(), starts_.end(),
                                           [&](const EpochStart& s) { return s.epoch < epoch; });
  if (stored != starts_.end() && stored->epoch == epoch) return *stored;
  const auto cycle = std::partition_point(cycles_.begin(), cycles_.end(),
                                          [&](const Cycle& c) { return c.end_epoch <= epoch; });
  ACCRUE_ASSERT(cycle != cycles_.end() && cycle->first_epoch <= epoch);
  const std::int64_t offset = epoch - cycle->first_epoch;
  return shifted(starts_[cycle->source + static_cast<std::size_t>(offset % cycle->period)], cycle->turn,
                 offset / cycle->period + 1);
}

StepPlan::EpochStart StepPlan::shifted(EpochStart s, const EpochStart& turn, std::int64_t turns) {
  s.epoch += turns * turn.epoch;
  s.steps += turns * turn.steps;
  s.windows += turns * turn.windows;
  s.samples += turns * turn.samples;
  s.open.first_epoch += static_cast<int>(turns * turn.epoch);
  s.open.last_epoch += static_cast<int>(turns * turn.epoch);
  return s;
}

std::int64_t StepPlan::samples_in(std::int64_t first, std::int64_t count) const {
  // first * micro_batch is below the dataset size, and so is the end unless it is the epoch's end.
  const std::int64_t end = first + count >= per_epoch_ ? samples_per_epoch_ : (first + count) * spec_.micro_batch;
  return end - first * spec_.micro_batch;
}

std::int64_t StepPlan::micro_batch_samples(std::int64_t index) const { return samples_in(index, 1); }

std::vector<Window> StepPlan::epoch_windows(int epoch) const {
  ACCRUE_CHECK(epoch >= 0 && epoch < spec_.epochs, "epoch {} is not one of the run's {} (0-based)", epoch, spec_.epochs);
  std::vector<Window> windows;
  const EpochStart next =
      run_epoch(start_of(epoch), [&](const Window& w, std::int64_t, std::int64_t) { windows.push_back(w); });
  if (next.carrying && next.epoch == spec_.epochs) windows.push_back(completed(next));
  return windows;
}

std::vector<MicroBatchSlot> StepPlan::epoch_slots(int epoch) const {
  ACCRUE_CHECK(epoch >= 0 && epoch < spec_.epochs, "epoch {} is not one of the run's {} (0-based)", epoch, spec_.epochs);
  std::vector<MicroBatchSlot> slots;
  // `count` micro-batches of window w from `first` on, the first at `position` in the window.
  const auto add = [&](const Window& w, std::int64_t first, std::int64_t count, int position) {
    for (std::int64_t k = 0; k < count; ++k, ++position)
      slots.push_back({first + k, w.index, position, w.micro_batches, w.samples, position + 1 == w.micro_batches, w.planned});
  };
  const EpochStart next = run_epoch(start_of(epoch), [&](const Window& w, std::int64_t first, std::int64_t count) {
    if (w.applied) add(w, first, count, w.micro_batches - static_cast<int>(count));
  });
  if (next.carrying) {  // the rest of the epoch belongs to a window that closes later
    const std::int64_t first = next.open.first_epoch == epoch ? next.open.first : 0;
    const std::int64_t count = per_epoch_ - first;
    add(completed(next), first, count, next.open.micro_batches - static_cast<int>(count));
  }
  return slots;
}

std::vector<EpochWindow> StepPlan::epoch_run(int epoch, std::int64_t from) const {
  std::vector<EpochWindow> windows;
  for (const MicroBatchSlot& slot : epoch_slots(epoch)) {
    if (slot.index < from) continue;
    if (windows.empty() || windows.back().micro_batches.back().window != slot.window) windows.emplace_back();
    windows.back().micro_batches.push_back(slot);
  }
  return windows;
}

std::int64_t StepPlan::steps_by_end_of(std::int64_t epoch) const {
  return epoch + 1 >= spec_.epochs ? end_.steps : start_of(epoch + 1).steps;
}

std::int64_t StepPlan::steps_after_epochs(double epochs) const {
  ACCRUE_CHECK(epochs >= 0, "a duration of {} epochs is negative", epochs);
  const std::int64_t total = spec_.epochs;
  if (epochs >= static_cast<double>(total)) {
    // Past the end of training: the last epoch's rate, so a too-long warmup shows as such.
    const std::int64_t last = end_.steps - (total > 1 ? steps_by_end_of(total - 2) : 0);
    const double more = (epochs - static_cast<double>(total)) * static_cast<double>(last);
    ACCRUE_CHECK(more < 0x1p62, "a duration of {} epochs is more optimizer steps than a 64-bit count holds", epochs);
    return end_.steps + std::llround(more);
  }
  const auto whole = static_cast<std::int64_t>(std::floor(epochs));
  const std::int64_t before = whole == 0 ? 0 : steps_by_end_of(whole - 1);
  const std::int64_t in_epoch = steps_by_end_of(whole) - before;
  return before + std::llround((epochs - static_cast<double>(whole)) * static_cast<double>(in_epoch));
}

std::int64_t StepPlan::steps_after_samples(std::int64_t samples) const {
  ACCRUE_CHECK(samples >= 0, "a duration of {} samples is negative", samples);
  if (samples == 0) return 0;
  // Past the end of training: more windows of the last one's size.
  if (samples > end_.samples) return end_.steps + (samples - end_.samples - 1) / last_window_samples_ + 1;
  // The last epoch that starts short of the count; a window that closes in it reaches the count.
  std::int64_t lo = 0, hi = spec_.epochs;
  while (lo < hi) {
    const std::int64_t mid = hi - (hi - lo) / 2;
    if (start_of(mid).samples < samples) lo = mid;
    else hi = mid - 1;
  }
  if (lo == spec_.epochs) return end_.steps;  // only the window applied when training ends reaches it
  const EpochStart s = start_of(lo);
  std::int64_t seen = s.samples, steps = s.steps;
  std::int64_t found = end_.steps;
  run_epoch(s, [&](const Window& w, std::int64_t, std::int64_t) {
    if (!w.applied || seen >= samples) return;
    seen += w.samples;
    ++steps;
    if (seen >= samples) found = steps;
  });
  return found;
}

}  // namespace accrue
