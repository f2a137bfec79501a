#include "accrue/framework/training/step_plan.hpp"

#include <cmath>

#include "accrue/framework/error.hpp"

namespace accrue {

int Window::micro_batches() const {
  int n = 0;
  for (const Segment& s : segments) n += s.count;
  return n;
}

StepPlan::StepPlan(const Spec& spec) : spec_(spec) {
  ACCRUE_CHECK(spec.micro_batch >= 1, "batch_size must be at least 1, got {}", spec.micro_batch);
  ACCRUE_CHECK(spec.epochs >= 1, "epochs must be at least 1, got {}", spec.epochs);
  ACCRUE_CHECK(spec.dataset_size >= 1, "the training set is empty");
  spec.schedule.validate_for(spec.micro_batch);
  per_epoch_ = spec.drop_last ? spec.dataset_size / spec.micro_batch
                              : (spec.dataset_size + spec.micro_batch - 1) / spec.micro_batch;
  ACCRUE_CHECK(per_epoch_ >= 1, "{} samples make no batch of {} with drop_last", spec.dataset_size, spec.micro_batch);

  std::int64_t step = 0;
  Window open;  // a window carried across an epoch boundary
  bool carrying = false;
  for (int epoch = 0; epoch < spec.epochs; ++epoch) {
    std::int64_t i = 0;
    while (i < per_epoch_) {
      Window w;
      if (carrying) {
        w = std::move(open);
        carrying = false;
      } else {
        w.planned = spec.schedule.steps_at(epoch, step, spec.micro_batch);
      }
      const int need = w.planned - w.micro_batches();
      const int take = static_cast<int>(std::min<std::int64_t>(need, per_epoch_ - i));
      w.segments.push_back({epoch, i, take});
      for (std::int64_t b = i; b < i + take; ++b) w.samples += micro_batch_samples(b);
      i += take;
      if (w.micro_batches() < w.planned) {  // cut short by the end of the epoch
        if (spec.last_window == LastWindow::carry) {
          open = std::move(w);
          carrying = true;
          break;
        }
        if (spec.last_window == LastWindow::drop) w.applied = false;
      }
      if (w.applied) ++step;
      windows_.push_back(std::move(w));
    }
    steps_by_epoch_end_.push_back(step);
  }
  if (carrying) {  // still open when training ends: applied, normalised by its size
    windows_.push_back(std::move(open));
    ++step;
    steps_by_epoch_end_.back() = step;
  }
  total_steps_ = step;
}

std::int64_t StepPlan::micro_batch_samples(std::int64_t index) const {
  const std::int64_t begin = index * spec_.micro_batch;
  return std::min(spec_.micro_batch, spec_.dataset_size - begin);
}

std::vector<MicroBatchSlot> StepPlan::epoch_slots(int epoch) const {
  std::vector<MicroBatchSlot> slots;
  for (std::size_t w = 0; w < windows_.size(); ++w) {
    const Window& window = windows_[w];
    if (!window.applied) continue;
    int position = 0;
    for (const auto& seg : window.segments) {
      for (int k = 0; k < seg.count; ++k, ++position) {
        if (seg.epoch != epoch) continue;
        slots.push_back({seg.first + k, static_cast<std::int64_t>(w), position, window.micro_batches(), window.samples,
                         position + 1 == window.micro_batches()});
      }
    }
  }
  return slots;
}

std::int64_t StepPlan::steps_after_epochs(double epochs) const {
  ACCRUE_CHECK(epochs >= 0, "a duration of {} epochs is negative", epochs);
  const int whole = static_cast<int>(std::floor(epochs));
  if (whole >= spec_.epochs) {
    // Past the end of training: the last epoch's rate, so a too-long warmup shows as such.
    const std::int64_t last = steps_by_epoch_end_.back() - (spec_.epochs > 1 ? steps_by_epoch_end_[spec_.epochs - 2] : 0);
    return total_steps_ + std::llround((epochs - spec_.epochs) * static_cast<double>(last));
  }
  const std::int64_t before = whole == 0 ? 0 : steps_by_epoch_end_[whole - 1];
  const std::int64_t in_epoch = steps_by_epoch_end_[whole] - before;
  return before + std::llround((epochs - whole) * static_cast<double>(in_epoch));
}

std::int64_t StepPlan::steps_after_samples(std::int64_t samples) const {
  ACCRUE_CHECK(samples >= 0, "a duration of {} samples is negative", samples);
  std::int64_t seen = 0, steps = 0, last = 1;
  for (const Window& w : windows_) {
    if (seen >= samples) break;
    if (!w.applied) continue;
    seen += w.samples;
    last = w.samples;
    ++steps;
  }
  // Past the end of training: more windows of the last one's size.
  if (seen < samples) steps += (samples - seen + last - 1) / last;
  return steps;
}

std::int64_t StepPlan::max_effective_batch() const {
  std::int64_t best = 0;
  for (const Window& w : windows_) best = std::max<std::int64_t>(best, w.planned * spec_.micro_batch);
  return best;
}

}  // namespace accrue
